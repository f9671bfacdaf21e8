package runner_test

import (
	"context"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
)

// The Docker twin of k8s-resize: a Go service left to choose its
// GOMAXPROCS starts on one CPU (--cpuset-cpus 0) and reports 1; a live
// change to --cpuset-cpus 0-1 makes the runtime's next check, about once a
// second, set it to 2, without a restart. Both guided steps tick, and the
// time from the change to the first sample reporting 2 is logged as a
// figure for docs/benchmarks.md.
func TestGOMAXPROCSFollowsALiveCpusetChange(t *testing.T) {
	m := newTestManager(t)
	r := startSpec(t, m, `{"lab": "gomaxprocs-cpuset"}`)
	waitFor(t, time.Minute, "the service reporting GOMAXPROCS 1", func() bool {
		v := r.View()
		return len(v.Steps) > 0 && v.Steps[0].State == runner.StepDone
	})
	rec, err := m.Changes().UpdateLimits(context.Background(), r.ID(), 0, specs.Limits{CpusetCpus: "0-1"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Applied.CpusetCpus != "0-1" {
		t.Errorf("applied after the change: %+v", rec.Applied)
	}
	v := waitDone(t, r, 2*time.Minute)
	checkSteps(t, v)
	first, last := -1.0, 0
	for _, s := range samplesOf(t, r) {
		if s.Lane != 0 || s.GOMAXPROCS == 0 {
			continue
		}
		if s.T < rec.AtSeconds && s.GOMAXPROCS != 1 {
			t.Errorf("at %.2f s, before the change: GOMAXPROCS %d on one CPU", s.T, s.GOMAXPROCS)
		}
		if s.T > rec.AtSeconds && s.GOMAXPROCS == 2 && first < 0 {
			first = s.T - rec.AtSeconds
		}
		last = s.GOMAXPROCS
	}
	if first < 0 || last != 2 {
		t.Fatalf("GOMAXPROCS did not follow the change to two CPUs (last %d)", last)
	}
	t.Logf("figure: gomaxprocs-cpuset (GOMAXPROCS after docker update --cpuset-cpus 0 → 0-1) | 1 → 2 in the first sample %.2f s after the change", first)
	if l := v.Lanes[0]; l.GOMAXPROCS != 2 {
		t.Errorf("the lane's view reports GOMAXPROCS %d", l.GOMAXPROCS)
	}
}
