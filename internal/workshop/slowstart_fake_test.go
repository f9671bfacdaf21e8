package workshop_test

import (
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine/enginefake"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workshop"
)

// A lane the engine is slow to start (a cluster's node making a pod) still
// has the run's duration to run: its time counts from its start, not from
// the run's. Here the engine takes 0.3 s to start a lane that runs for
// 0.8 s in a run of 1 s; counted from the run's start it would be killed.
func TestFakeSlowStartDoesNotShortenALane(t *testing.T) {
	fake := enginefake.New()
	fake.StartDelay, fake.Runtime = 300*time.Millisecond, 800*time.Millisecond
	m := fakeManager(t, fake, workshop.Options{})
	r, err := fakeSubmit(t, m, "ann", `{"name": "slow start", "mode": "parallel", "duration": "1s",
		"lanes": [{"name": "a", "workload": {"kind": "spin", "seconds": 1}}, {"name": "b", "workload": {"kind": "spin", "seconds": 1}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	v := ended(t, r)
	if v.State != runner.StateDone {
		t.Fatalf("run ended %s: %s", v.State, v.Error)
	}
	for _, l := range v.Lanes {
		if l.TimedOut || l.ExitCode == nil || *l.ExitCode != 0 {
			t.Errorf("lane %s: timed out %v, exited %v (code 0 wanted), ran %.2f–%.2f s", l.Name, l.TimedOut, l.ExitCode != nil, l.StartedAt, l.EndedAt)
		}
	}
}
