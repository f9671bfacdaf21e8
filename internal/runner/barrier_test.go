package runner_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workshop"
)

// barrierRun runs n parallel spin lanes and returns what it ended as.
func barrierRun(t testing.TB, m *workshop.Manager, n int) runner.RunView {
	t.Helper()
	var lanes []string
	for i := range n {
		lanes = append(lanes, fmt.Sprintf(`{"name": "l%d", "workload": {"kind": "spin", "seconds": 2}}`, i))
	}
	r := startSpec(t, m, `{"mode": "parallel", "duration": "60s", "lanes": [`+strings.Join(lanes, ",")+`]}`)
	v := waitDone(t, r, 2*time.Minute)
	if v.State != runner.StateDone {
		t.Fatalf("run %s: %s", v.State, v.Error)
	}
	if s := v.Start; s == nil || s.Lanes != n {
		t.Fatalf("start barrier: %+v, want all %d lanes", s, n)
	}
	return v
}

// sameInstant checks that every lane of a barrier's run counts from the
// instant the barrier let them go: not a measured figure, so checked once.
func sameInstant(t *testing.T, v runner.RunView) {
	t.Helper()
	for _, l := range v.Lanes {
		if l.StartedAt != v.Lanes[0].StartedAt {
			t.Errorf("lane %s began at %.3f s, lane %s at %.3f s: a barrier's lanes begin at the instant it lets them go", l.Name, l.StartedAt, v.Lanes[0].Name, v.Lanes[0].StartedAt)
		}
	}
}

// Parallel lanes are started one after another but begin their work
// together: as many busy lanes as the host has CPUs within 5 ms of each
// other; twelve within less than the spread of their starts, in the same
// run. More busy lanes than CPUs cannot all begin at once: the kernel
// wakes them all at the barrier's instant and runs them a scheduler tick
// at a time (4 ms here, two lanes a tick on two CPUs). How far apart they
// began is measured, and a burst of the shared host's other work can
// spoil it (CI once saw 17 ms for two lanes), so it is measured again
// then, and each spoiled attempt is logged.
func TestStartBarrier(t *testing.T) {
	m := newTestManager(t)
	cpus := runtime.NumCPU()
	var few, many runner.RunView
	enginetest.Measure(t, "start barrier, one lane a CPU", func(t testing.TB) {
		few = barrierRun(t, m, cpus)
		s := few.Start
		t.Logf("figure: start barrier, %d lanes (one a CPU) | began within %.2f ms; the engine started them over %.0f ms", cpus, s.SkewMs, s.StartsMs)
		if s.SkewMs >= 5 {
			t.Errorf("%d lanes, one a CPU, began %.2f ms apart, want under 5 ms", cpus, s.SkewMs)
		}
	})
	enginetest.Measure(t, "start barrier, 12 lanes", func(t testing.TB) {
		many = barrierRun(t, m, 12)
		s := many.Start
		t.Logf("figure: start barrier, 12 lanes | began within %.2f ms; the engine started them over %.0f ms", s.SkewMs, s.StartsMs)
		if s.SkewMs >= s.StartsMs {
			t.Errorf("the lanes began %.2f ms apart, no closer than the engine started them (%.0f ms)", s.SkewMs, s.StartsMs)
		}
	})
	sameInstant(t, few)
	sameInstant(t, many)
}
