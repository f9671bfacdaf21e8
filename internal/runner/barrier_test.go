package runner_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/runner"
)

// Twelve parallel lanes are started one after another but begin their
// work together: the spread of the instants their workloads say they
// began is smaller than the spread of their starts, in the same run.
func TestStartBarrier(t *testing.T) {
	m := newTestManager(t)
	var lanes []string
	for i := range 12 {
		lanes = append(lanes, fmt.Sprintf(`{"name": "l%d", "workload": {"kind": "spin", "seconds": 2}}`, i))
	}
	r := startSpec(t, m, `{"mode": "parallel", "duration": "60s", "lanes": [`+strings.Join(lanes, ",")+`]}`)
	v := waitDone(t, r, 2*time.Minute)
	if v.State != runner.StateDone {
		t.Fatalf("run %s: %s", v.State, v.Error)
	}
	s := v.Start
	if s == nil || s.Lanes != 12 {
		t.Fatalf("start barrier: %+v, want all 12 lanes", s)
	}
	t.Logf("figure: start barrier, 12 lanes | began within %.2f ms; the engine started them over %.0f ms", s.SkewMs, s.StartsMs)
	if s.SkewMs >= s.StartsMs {
		t.Errorf("the lanes began %.2f ms apart, no closer than the engine started them (%.0f ms)", s.SkewMs, s.StartsMs)
	}
	for _, l := range v.Lanes {
		if l.StartedAt != v.Lanes[0].StartedAt {
			t.Errorf("lane %s began at %.3f s, lane %s at %.3f s: a barrier's lanes begin at the instant it lets them go", l.Name, l.StartedAt, v.Lanes[0].Name, v.Lanes[0].StartedAt)
		}
	}
}
