package workshop

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
)

// SubmitFrom checks a validated plan against the quotas, the queue's
// length and what the client's address already has, and queues it; it
// starts as soon as the host is free and the participants before it have
// had their turn. A refusal is a *QuotaError.
func (m *Manager) SubmitFrom(spec specs.Spec, plan specs.Plan, participant, address string) (*runner.Run, error) {
	if m.ctx.Err() != nil {
		return nil, ErrShuttingDown
	}
	if st := m.opts.Store; st != nil {
		if err := st.Health(m.opts.StoreMinFree); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrStore, err)
		}
	}
	e := &entry{run: runner.New(m.env, newID(), participant, spec, plan), spec: spec, address: address, ask: askOf(plan, m.pool.Host().NCPU)}
	if m.opts.Pool != nil {
		e.fits = map[string]fit{}
	}
	if plan.Repeat > 1 {
		e.rest = newSeries(m.env, e, spec, plan)
	}
	m.mu.Lock()
	if m.ctx.Err() != nil {
		m.mu.Unlock()
		return nil, ErrShuttingDown
	}
	if err := m.admitLocked(e, participant); err != nil {
		m.mu.Unlock()
		return nil, err
	}
	for _, s := range append([]*entry{e}, e.rest...) {
		m.runs[s.run.ID()] = s
		m.order = append(m.order, s)
	}
	m.queue.Push(participant, address, e)
	e.expiry = time.AfterFunc(m.opts.MaxWait, func() { m.expire(e) })
	m.mu.Unlock()

	for _, s := range e.rest {
		s.run.Announce()
	}
	e.run.Announce()
	m.schedule()
	return e.run, nil
}

// admitLocked checks a new run against the participant's limits (over
// their queued and running runs) and the host's (the run alone: whether it
// could ever run; the queue waits for room among the running ones).
func (m *Manager) admitLocked(e *entry, participant string) error {
	if n := m.queue.Len(); n >= m.opts.MaxQueue {
		return &QuotaError{Scope: "server", Limit: "queue", Lane: -1, InUse: float64(n), Max: float64(m.opts.MaxQueue), Over: 1,
			Text: fmt.Sprintf("the queue is full: %d runs wait already, the most this server holds; try again when some have run", n)}
	}
	var used ask
	fromAddress := 0
	for _, o := range m.order {
		if o.follows || o.run.Ended() {
			continue
		}
		if o.run.Participant() == participant {
			used = used.plus(o.ask)
		}
		if e.address != "" && o.address == e.address {
			fromAddress++
		}
	}
	if lim := m.opts.AddressRuns; lim > 0 && fromAddress >= lim {
		return &QuotaError{Scope: "address", Limit: "runs", Lane: -1, Asked: 1, InUse: float64(fromAddress), Max: float64(lim), Over: 1,
			Text: fmt.Sprintf("address limit on runs exceeded by 1 runs: your address %s has %d queued or running runs, the limit is %d, whatever participants it claims to be", e.address, fromAddress, lim)}
	}
	q := m.opts.Quotas
	if err := checkLimits("participant", e.run.Plan(), e.ask, used, q.Participant); err != nil {
		return err
	}
	if err := checkLimits("host", e.run.Plan(), e.ask, ask{}, q.Host); err != nil {
		return err
	}
	return nil
}

// schedule starts queued runs while there is room, fairly across
// participants, then tells the runs still waiting where they are.
func (m *Manager) schedule() {
	m.mu.Lock()
	if m.ctx.Err() == nil {
		for {
			// Next returns the last entry it asked about: the pool placed
			// it on pe.
			var pe *poolEngine
			var env *runner.Env
			var plan specs.Plan
			e, ok := m.queue.Next(func(e *entry) bool { pe, env, plan = m.pool.take(e); return pe != nil })
			if !ok {
				break
			}
			e.expiry.Stop()
			m.running[e], e.engine = true, pe
			if m.opts.Pool != nil {
				e.run.Assign(env, pe.Name, plan)
			}
			m.launchLocked(e)
		}
	}
	waiting := m.queue.Order()
	m.mu.Unlock()
	for i, e := range waiting {
		e.run.SetQueuePosition(i + 1)
	}
}

// launchLocked runs e in the background; m.mu is held.
func (m *Manager) launchLocked(e *entry) {
	m.wg.Add(1)
	// Lives until the run has ended and its containers are gone.
	go func() {
		defer m.wg.Done()
		e.run.Execute(m.ctx)
		next := m.nextInSeries(e)
		m.mu.Lock()
		delete(m.running, e)
		m.pool.ended(e.engine, e)
		// The series' next run takes its turn in the queue like any
		// other: the participants waiting are served between its runs.
		queued := next != nil && m.ctx.Err() == nil
		if queued {
			m.queue.Push(next.run.Participant(), next.address, next)
			next.expiry = time.AfterFunc(m.opts.MaxWait, func() { m.expire(next) })
		}
		m.mu.Unlock()
		if next != nil && !queued {
			m.endQueued(next, runner.StateStopped, "the server shut down before this run started")
		}
		m.forget(e)
		m.schedule()
	}()
}

// expire refuses a run that waited in the queue as long as a run may.
func (m *Manager) expire(e *entry) {
	m.mu.Lock()
	removed := m.queue.Remove(e)
	m.mu.Unlock()
	if !removed {
		return
	}
	m.endQueued(e, runner.StateRefused, fmt.Sprintf("refused: waited %s in the queue, the longest a run may wait on this server; nothing was started. "+
		"Other experiments held the host all that time: try again when it is quieter.", m.opts.MaxWait))
	m.schedule()
}

// endQueued ends a run that never started.
func (m *Manager) endQueued(e *entry, s runner.State, why string) {
	if e.expiry != nil {
		e.expiry.Stop()
	}
	e.run.EndQueued(s, why)
	m.forget(e)
	m.endSeries(e.rest, "an earlier run of its series never started, so this one did not either")
}

// Stop asks a run to stop: a queued run leaves the queue; a running run's
// containers are killed and it ends as "stopped", with what was measured
// so far kept. Stopping a run that has ended already does nothing.
func (m *Manager) Stop(id string) error {
	m.mu.Lock()
	e, ok := m.runs[id]
	removed := ok && m.queue.Remove(e)
	waiting := ok && e.follows // a series' later run, not queued yet
	if waiting {
		e.follows = false
	}
	m.mu.Unlock()
	if waiting {
		m.endQueued(e, runner.StateStopped, "stopped while it waited for the run of its series before it; nothing was started")
		return nil
	}
	if !ok {
		if _, stored := m.archive.View(id); stored {
			return nil // already ended
		}
		return fmt.Errorf("%w %q", ErrNoRun, id)
	}
	if removed {
		m.endQueued(e, runner.StateStopped, "stopped while it waited in the queue; nothing was started")
		m.schedule()
		return nil
	}
	e.run.Stop()
	return nil
}

// ClearQueue ends the queued runs of a participant, or every queued run
// if participant is "" (running ones go on), and says how many.
func (m *Manager) ClearQueue(participant, why string) int {
	m.mu.Lock()
	var queued []*entry
	if participant == "" {
		for {
			e, ok := m.queue.Next(nil)
			if !ok {
				break
			}
			queued = append(queued, e)
		}
	} else {
		queued = m.queue.Take(participant)
	}
	m.mu.Unlock()
	for _, e := range queued {
		m.endQueued(e, runner.StateStopped, why)
	}
	return len(queued)
}

// forget drops an ended run from memory once the store has all of it, so
// that what is loaded from then on is complete. Without a store, ended runs
// stay in memory.
func (m *Manager) forget(e *entry) {
	if m.opts.Store == nil {
		return
	}
	if err := m.opts.Store.Sync(); err != nil {
		m.log.Error("store", slog.Any("err", err))
		return // keep it in memory: it is the only whole copy
	}
	m.mu.Lock()
	delete(m.runs, e.run.ID())
	if i := slices.Index(m.order, e); i >= 0 {
		m.order = slices.Delete(m.order, i, i+1)
	}
	m.mu.Unlock()
	m.archive.prune()
}
