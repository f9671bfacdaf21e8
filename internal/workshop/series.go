package workshop

import (
	"fmt"

	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/runner"
)

// newSeries makes the later runs of a series led by first: the same spec,
// every other one in the reverse order where the lanes run one after
// another. They wait for the run before them, on the host it holds.
func newSeries(env *runner.Env, first *entry, spec experiments.Spec, plan experiments.Plan, participant string) []*entry {
	ids := []string{first.run.ID()}
	var rest []*entry
	for k := 1; k < plan.Repeat; k++ {
		e := &entry{run: runner.New(env, newID(), participant, spec, experiments.RoundPlan(plan, k)), address: first.address, ask: first.ask, follows: true}
		ids = append(ids, e.run.ID())
		rest = append(rest, e)
	}
	first.run.InSeries(runner.Series{ID: ids[0], Index: 0, Runs: ids})
	for k, e := range rest {
		e.run.InSeries(runner.Series{ID: ids[0], Index: k + 1, Runs: ids})
	}
	return rest
}

// nextInSeries is the run of e's series to start now that e has ended:
// the next that has not ended, if e ran to its end. A series whose run
// failed or was stopped ends there: its later runs end as stopped.
func (m *Manager) nextInSeries(e *entry) *entry {
	if len(e.rest) == 0 {
		return nil
	}
	v := e.run.View()
	if v.State != runner.StateDone {
		m.endSeries(e.rest, fmt.Sprintf("run %d of its series ended %s, so the later ones did not start", v.Series.Index+1, v.State))
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, next := range e.rest {
		if !next.follows { // stopped while it waited
			continue
		}
		next.follows = false
		next.rest = e.rest[i+1:]
		return next
	}
	return nil
}

// endSeries ends a series' later runs that have not started.
func (m *Manager) endSeries(rest []*entry, why string) {
	for _, e := range rest {
		if !e.run.Ended() {
			e.run.EndQueued(runner.StateStopped, why)
		}
		m.forget(e)
	}
}
