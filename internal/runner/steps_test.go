package runner

import (
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// A run that ends before its steps are done says of each why it was not:
// the page must not keep a step "in progress" once nothing can tick it.
func TestStepsUnfinishedAtTheEnd(t *testing.T) {
	change := &specs.StepChange{Lane: "svc", Limits: specs.Limits{CPUs: "0.5"}}
	check := &specs.Check{Lane: "svc", Metric: specs.CheckThrottled, Op: ">", Value: 0.3, Seconds: 5}
	g := guide{
		steps: []experiments.ResolvedStep{
			{Step: specs.Step{Prompt: "done"}, ChangeLane: -1, CheckLane: -1},
			{Step: specs.Step{Prompt: "never changed", Change: change}, ChangeLane: 0, CheckLane: -1},
			{Step: specs.Step{Prompt: "after it"}, ChangeLane: -1, CheckLane: -1},
		},
		states: []stepState{{state: StepDone, doneAt: 1}, {state: StepActive}, {state: StepWaiting}},
	}
	live := g.views(false)
	if live[1].State != StepActive || live[1].Outcome != "" || live[2].State != StepWaiting {
		t.Fatalf("a live run's steps changed: %+v", live)
	}
	end := g.views(true)
	if end[0].State != StepDone || end[0].Outcome != "" {
		t.Errorf("a done step at the end: %+v", end[0])
	}
	for k, want := range map[int]string{1: "Not acted on: the run ended before this step's change (docker update", 2: "Not reached"} {
		if end[k].State != StepUnfinished || !strings.HasPrefix(end[k].Outcome, want) {
			t.Errorf("step %d at the end: state %q, outcome %q, want unfinished and %q", k, end[k].State, end[k].Outcome, want)
		}
	}

	// A check that never had a full window, and one that read false to
	// the end.
	for _, c := range []struct {
		st   stepState
		want string
	}{
		{stepState{state: StepActive}, "Not judged: "},
		{stepState{state: StepActive, full: true, value: 0.12}, "Did not hold: the check was still false when the run ended (now 12%)."},
	} {
		g := guide{steps: []experiments.ResolvedStep{{Step: specs.Step{Prompt: "p", Check: check}, ChangeLane: -1, CheckLane: 0}}, states: []stepState{c.st}}
		v := g.views(true)[0]
		if v.State != StepUnfinished || !strings.HasPrefix(v.Outcome, c.want) {
			t.Errorf("%+v at the end: state %q, outcome %q, want %q", c.st, v.State, v.Outcome, c.want)
		}
	}
}
