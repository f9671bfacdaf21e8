package workshop

import (
	"context"
	"fmt"

	"github.com/docker/go-units"
	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
)

// Changes are the live changes to running runs' limits: each admitted
// against the quotas, beside the manager's other runs, as a submission
// is, then made by its run on its engine.
type Changes struct{ m *Manager }

// UpdateLimits changes a running lane's limits (see runner.Run.UpdateLimits).
func (c *Changes) UpdateLimits(ctx context.Context, runID string, lane int, change specs.Limits) (runner.ChangeRecord, error) {
	m := c.m
	// Only a run in memory can be running: an ended one is not loaded
	// from the store just to say so.
	e, ok := m.live(runID)
	if !ok {
		if _, stored := m.archive.View(runID); stored {
			return runner.ChangeRecord{}, runner.ErrLaneNotRunning
		}
		return runner.ChangeRecord{}, fmt.Errorf("%w %q", ErrNoRun, runID)
	}
	var admitted []specs.Resources
	rec, err := e.run.UpdateLimits(ctx, lane, change, func(after []specs.Resources) error {
		admitted = after
		return c.admit(e, lane, after)
	})
	if err == nil {
		// The run's ask is what its lanes may use now.
		ncpu := c.hostOf(e).NCPU
		m.mu.Lock()
		e.ask = askOf(withResources(e.run.Plan(), admitted), ncpu)
		m.mu.Unlock()
	}
	return rec, err
}

// admit checks a lane's limits after a live change as a submission
// is checked: against the participant's quotas over their other queued and
// running runs, the host's over the other running runs, and the host's
// memory, which no run's lanes may ask for more than in all.
func (c *Changes) admit(e *entry, lane int, after []specs.Resources) error {
	m := c.m
	plan := withResources(e.run.Plan(), after)
	host := c.hostOf(e)
	a := askOf(plan, host.NCPU)
	if total := host.MemTotal; total > 0 && a.memory > total {
		return specs.Errors{{Lane: lane, Field: "memory", Message: fmt.Sprintf(
			"the run's lanes would ask for %s of memory in all, more than the host's %s", units.BytesSize(float64(a.memory)), units.BytesSize(float64(total)))}}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var mine, running ask
	for _, o := range m.order {
		if o == e || o.run.Ended() {
			continue
		}
		if o.run.Participant() == e.run.Participant() {
			mine = mine.plus(o.ask)
		}
		if m.running[o] && o.engine == e.engine {
			running = running.plus(o.ask)
		}
	}
	q := m.opts.Quotas
	err := checkLimits("participant", plan, a, mine, q.Participant)
	if err == nil {
		err = checkLimits("host", plan, a, running, q.Host)
	}
	if err != nil {
		if err.Lane < 0 {
			err.Lane = lane // the change is the lane's
		}
		return err
	}
	return nil
}

// hostOf is the host of the engine e runs on, or the manager's.
func (c *Changes) hostOf(e *entry) engine.HostInfo {
	m := c.m
	m.mu.Lock()
	pe := e.engine
	m.mu.Unlock()
	if pe == nil {
		return m.pool.Host()
	}
	return m.pool.hostOf(pe)
}
