package workshop_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine/enginefake"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workshop"
)

const seriesSpec = `{"name": "series", "mode": "sequential", "duration": "10s", "repeat": 3,
	"lanes": [{"name": "a", "workload": {"kind": "spin", "seconds": 1}}, {"name": "b", "workload": {"kind": "spin", "seconds": 1}}]}`

// TestFakeSeriesTakesTurns: a series' runs go one after another, each
// taking its turn in the queue, so another participant's run goes between
// them; the quotas count the series once.
func TestFakeSeriesTakesTurns(t *testing.T) {
	fake := enginefake.New()
	fake.Runtime = 20 * time.Millisecond
	m := fakeManager(t, fake, workshop.Options{MaxRunning: 1, Quotas: &workshop.Quotas{Participant: workshop.Limits{Runs: 1}}})
	first, err := fakeSubmit(t, m, "ann", seriesSpec)
	if err != nil {
		t.Fatal(err)
	}
	bob := mustSubmit(t, m, "bob")
	if _, err := fakeSubmit(t, m, "ann", fakeSpec); err == nil {
		t.Fatal("ann's second submission passed her quota of one")
	}
	s := first.View().Series
	if s == nil || len(s.Runs) != 3 || s.Index != 0 || s.ID != first.ID() {
		t.Fatalf("series %+v", s)
	}
	var views []runner.RunView
	for _, id := range s.Runs {
		v := waitEnded(t, m, id)
		if v.State != runner.StateDone || v.Series == nil || v.Series.Runs[v.Series.Index] != id {
			t.Fatalf("run %s: %s %s, series %+v", id, v.State, v.Error, v.Series)
		}
		views = append(views, v)
	}
	b := ended(t, bob)
	for k := 1; k < 3; k++ {
		if !views[k].StartedAt.After(views[k-1].StartedAt) {
			t.Errorf("run %d started %v, before run %d at %v", k+1, views[k].StartedAt, k, views[k-1].StartedAt)
		}
	}
	if !b.StartedAt.After(views[0].StartedAt) || !b.StartedAt.Before(views[1].StartedAt) {
		t.Errorf("bob's run started at %v, not between ann's first two (%v, %v)", b.StartedAt, views[0].StartedAt, views[1].StartedAt)
	}
	sv, ok := m.Archive().Series(first.ID())
	if !ok || sv.Done != 3 || sv.Unit != "s" || len(sv.Lanes) != 2 || sv.Lanes[0].Stats.N != 3 || len(sv.Comparisons) != 1 {
		t.Fatalf("series view %+v", sv)
	}
	if o := sv.Runs[1].Order; len(o) != 2 || o[0] != "b" {
		t.Errorf("run 2 ran its lanes in the order %v, want b first", o)
	}
	if _, ok := m.Archive().Series(s.Runs[1]); ok {
		t.Error("a later run's id names a series")
	}
	// The sequential lanes alternate their order: b before a in run 2.
	if a, bb := views[1].Lanes[0].StartedAt, views[1].Lanes[1].StartedAt; !(bb < a) {
		t.Errorf("run 2: lane a at %.3f, b at %.3f; want b first", a, bb)
	}
}

// TestFakeSeriesStopsWhereItFails: stopping a later run while it waits
// takes it alone out; stopping the running one ends the rest.
func TestFakeSeriesStops(t *testing.T) {
	fake := enginefake.New()
	fake.Runtime = time.Minute
	m := fakeManager(t, fake, workshop.Options{MaxRunning: 1})
	first, err := fakeSubmit(t, m, "ann", strings.Replace(seriesSpec, `"repeat": 3`, `"repeat": 4`, 1))
	if err != nil {
		t.Fatal(err)
	}
	runs := first.View().Series.Runs
	if err := m.Stop(runs[2]); err != nil {
		t.Fatal(err)
	}
	if v := waitEnded(t, m, runs[2]); v.State != runner.StateStopped || !strings.Contains(v.Error, "waited for the run of its series") {
		t.Errorf("run 3: %s %q", v.State, v.Error)
	}
	if err := m.Stop(runs[0]); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{runs[1], runs[3]} {
		if v := waitEnded(t, m, id); v.State != runner.StateStopped || !strings.Contains(v.Error, "run 1 of its series ended stopped") || !v.StartedAt.IsZero() {
			t.Errorf("run %s: %s %q, started %v", id, v.State, v.Error, v.StartedAt)
		}
	}
}

func waitEnded(t *testing.T, m *workshop.Manager, id string) runner.RunView {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if v, ok := m.Archive().View(id); ok && v.Ended {
			return v
		}
		if time.Now().After(deadline) {
			v, _ := m.Archive().View(id)
			t.Fatalf("run %s did not end: %+v", id, v)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFakeGuidedStepsFollowChanges walks a guided lab's steps of changes
// alone: each is done as soon as the participant's live change includes
// it, and a change that does not match leaves the step waiting for it.
func TestFakeGuidedStepsFollowChanges(t *testing.T) {
	m, r := runningGuided(t, workshop.Options{MaxRunning: 1})
	states := func() string {
		var s []string
		for _, st := range r.View().Steps {
			s = append(s, st.State)
		}
		return strings.Join(s, " ")
	}
	if got := states(); got != "active waiting" {
		t.Fatalf("steps at the start: %s", got)
	}
	ctx := context.Background()
	for _, c := range []struct{ cpus, want string }{
		{"0.25", "active waiting"}, // not the change the first step asks for
		{"0.5", "done active"},
		{"0.25", "done done"},
	} {
		if _, err := m.Changes().UpdateLimits(ctx, r.ID(), 0, specs.Limits{CPUs: specs.Value(c.cpus)}); err != nil {
			t.Fatal(err)
		}
		if got := states(); got != c.want {
			t.Errorf("after --cpus %s: steps %s, want %s", c.cpus, got, c.want)
		}
	}
	if v := r.View(); !v.Steps[0].Changed || v.Steps[1].DoneAt < v.Steps[0].DoneAt {
		t.Errorf("steps %+v", v.Steps)
	}
	if err := m.Stop(r.ID()); err != nil {
		t.Fatal(err)
	}
	ended(t, r)
}

// TestFakeGuidedStepsUnfinishedAtTheEnd: a guided run stopped after its
// first step shows its second as unfinished, not acted on, and an export
// imports the same.
func TestFakeGuidedStepsUnfinishedAtTheEnd(t *testing.T) {
	m, r := runningGuided(t, workshop.Options{MaxRunning: 1, Store: fakeStore(t)})
	if _, err := m.Changes().UpdateLimits(context.Background(), r.ID(), 0, specs.Limits{CPUs: "0.5"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Stop(r.ID()); err != nil {
		t.Fatal(err)
	}
	ended(t, r)
	check := func(from string, steps []runner.StepView) {
		t.Helper()
		if len(steps) != 2 || steps[0].State != runner.StepDone || steps[1].State != runner.StepUnfinished ||
			!strings.HasPrefix(steps[1].Outcome, "Not acted on: the run ended before this step's change (docker update --cpus 0.25") {
			t.Errorf("%s: steps at the end %+v", from, steps)
		}
	}
	check("the run", r.View().Steps)
	e, err := m.Archive().Export(r.ID())
	if err != nil {
		t.Fatal(err)
	}
	// An export from before unfinished steps: the step still active.
	e.Run.Steps[1].State, e.Run.Steps[1].Outcome = runner.StepActive, ""
	id, err := m.Archive().ImportExport(e)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := m.Archive().View(id)
	check("the import", v.Steps)
}

// runningGuided installs a guided lab of two changes of one lane's
// --cpus, and starts it on the fake engine with opts: the manager and the
// run, its lane running.
func runningGuided(t *testing.T, opts workshop.Options) (*workshop.Manager, *runner.Run) {
	t.Helper()
	lab := `{"id": "fake-guided", "title": "Fake guided", "topic": "cpu",
	  "steps": [
	    {"prompt": "Halve it", "change": {"lane": "a", "limits": {"cpus": "0.5"}}},
	    {"prompt": "Quarter it", "change": {"lane": "a", "limits": {"cpus": "0.25"}}}
	  ],
	  "spec": {"name": "guided", "lanes": [{"name": "a", "workload": {"kind": "spin", "seconds": 60}, "limits": {"cpus": "1"}}]}}`
	l, broken := experiments.ParseLabFile("fake.json", []byte(lab))
	if broken != nil {
		t.Fatal(broken)
	}
	prev := experiments.Current()
	experiments.Install(experiments.NewCatalog([]experiments.Lab{l}, nil))
	t.Cleanup(func() { experiments.Install(prev) })
	fake := enginefake.New()
	fake.Runtime = time.Minute
	m := fakeManager(t, fake, opts)
	r, err := fakeSubmit(t, m, "ann", `{"lab": "fake-guided"}`)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); r.View().Lanes[0].State != runner.LaneRunning; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the lane never ran")
		}
	}
	return m, r
}
