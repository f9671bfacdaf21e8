package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/hub"
)

// Get finds a run by id: a queued or running one in memory, an ended one
// in the store, replayable as it was streamed.
func (m *Manager) Get(id string) (*Run, bool) {
	m.mu.Lock()
	r, ok := m.runs[id]
	m.mu.Unlock()
	if ok {
		return r, true
	}
	r, err := m.load(id)
	return r, err == nil
}

// View is a run as it is now, or as it ended, without its stream.
func (m *Manager) View(id string) (RunView, bool) {
	m.mu.Lock()
	r, ok := m.runs[id]
	m.mu.Unlock()
	if ok {
		return r.View(), true
	}
	if m.opts.Store == nil {
		return RunView{}, false
	}
	row, err := m.opts.Store.Get(id)
	if err != nil {
		return RunView{}, false
	}
	var v RunView
	if err := json.Unmarshal(row.View, &v); err != nil {
		m.log.Error("stored view", "run", id, "err", err)
		return RunView{}, false
	}
	return v, true
}

// Feed is the live fan-out of a run; an ended run's is closed and holds
// its whole stream.
func (m *Manager) Feed(id string) (*hub.Hub, bool) {
	r, ok := m.Get(id)
	if !ok {
		return nil, false
	}
	return r.hub, true
}

// MaxList bounds the runs List returns.
const MaxList = 500

// List returns at most limit runs (MaxList if limit is out of range),
// newest first; lab, if set, keeps that lab's.
func (m *Manager) List(lab string, limit int) []RunView {
	if limit <= 0 || limit > MaxList {
		limit = MaxList
	}
	m.mu.Lock()
	live := append([]*Run(nil), m.order...)
	m.mu.Unlock()
	byID := map[string]*Run{}
	for _, r := range live {
		byID[r.id] = r
	}
	var out []RunView
	if m.opts.Store != nil {
		stored, err := m.listStored(lab, limit)
		if err != nil {
			m.log.Error("history", "err", err)
		}
		for _, v := range stored {
			if r, ok := byID[v.ID]; ok {
				v = r.View()
				delete(byID, v.ID)
			}
			out = append(out, v)
		}
	}
	// Runs in memory that the store does not list (no store, or not yet
	// written): newest first, before the stored ones.
	var fresh []RunView
	for i := len(live) - 1; i >= 0; i-- {
		if _, ok := byID[live[i].id]; ok && (lab == "" || live[i].plan.Lab == lab) {
			fresh = append(fresh, live[i].View())
		}
	}
	out = append(fresh, out...)
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Start submits a plan for an anonymous participant; see Submit.
func (m *Manager) Start(spec experiments.Spec, plan experiments.Plan) (*Run, error) {
	return m.Submit(spec, plan, "")
}

// Submit checks a validated plan against the quotas and queues it; it
// starts as soon as the host is free and the participants before it have
// had their turn. A refusal is a *QuotaError.
func (m *Manager) Submit(spec experiments.Spec, plan experiments.Plan, participant string) (*Run, error) {
	if m.ctx.Err() != nil {
		return nil, errors.New("runner: shutting down")
	}
	a := askOf(plan, m.opts.Host.NCPU)
	r := &Run{id: newID(), participant: participant, ask: a, plan: plan, hub: hub.New(0), done: make(chan struct{}), store: m.opts.Store}
	r.view = RunView{
		ID: r.id, Lab: plan.Lab, Name: plan.Name, Spec: spec, Mode: plan.Mode, Duration: plan.Duration.Seconds(),
		State: StateQueued, CreatedAt: time.Now().UTC(), IntervalMs: m.opts.Interval.Milliseconds(),
		PhaseBounds: plan.PhaseBounds(), Host: m.opts.Host.Describe(),
	}
	if m.opts.Host.StatsSource == "engine" {
		r.view.StatsNote = m.opts.Host.StatsNote
	}
	for i, l := range plan.Lanes {
		r.view.Lanes = append(r.view.Lanes, LaneResult{
			Index: i, Name: l.Name, Workload: l.Workload, Unit: l.Workload.Unit(), State: LanePending,
			Requested: l.Resources, CPULimit: l.Resources.CPULimit(),
		})
		r.lanes = append(r.lanes, &laneRT{})
	}
	r.cancel = func() {} // until it runs

	m.mu.Lock()
	if err := m.admitLocked(r); err != nil {
		m.mu.Unlock()
		return nil, err
	}
	m.runs[r.id] = r
	m.order = append(m.order, r)
	m.queue.Push(participant, r)
	r.expiry = time.AfterFunc(m.opts.MaxWait, func() { m.expire(r) })
	m.mu.Unlock()

	r.save()
	r.publishView()
	m.schedule()
	return r, nil
}

// admitLocked checks a new run against the participant's limits (over
// their queued and running runs) and the host's (the run alone: whether it
// could ever run; the queue waits for room among the running ones).
func (m *Manager) admitLocked(r *Run) error {
	var used ask
	for _, o := range m.order {
		if o.participant == r.participant && m.activeLocked(o) {
			used = used.plus(o.ask)
		}
	}
	q := m.opts.Quotas
	if err := checkLimits("participant", r.plan, r.ask, used, q.Participant); err != nil {
		return err
	}
	if err := checkLimits("host", r.plan, r.ask, ask{}, q.Host); err != nil {
		return err
	}
	return nil
}

// activeLocked says whether a run is queued or running.
func (m *Manager) activeLocked(r *Run) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.view.State.Ended()
}

// schedule starts queued runs while there is room, fairly across
// participants, then tells the runs still waiting where they are.
func (m *Manager) schedule() {
	var moved []*Run
	m.mu.Lock()
	if m.ctx.Err() == nil {
		for len(m.running) < m.opts.MaxRunning {
			var inUse ask
			for o := range m.running {
				inUse = inUse.plus(o.ask)
			}
			r, ok := m.queue.Next(func(r *Run) bool {
				return checkLimits("host", r.plan, r.ask, inUse, m.opts.Quotas.Host) == nil
			})
			if !ok {
				break
			}
			r.expiry.Stop()
			m.running[r] = true
			m.launch(r)
		}
	}
	for i, r := range m.queue.Order() {
		r.mu.Lock()
		if r.view.QueuePosition != i+1 {
			r.view.QueuePosition = i + 1
			moved = append(moved, r)
		}
		r.mu.Unlock()
	}
	m.mu.Unlock()
	for _, r := range moved {
		r.publishView()
	}
}

// launch runs r in the background; m.mu is held.
func (m *Manager) launch(r *Run) {
	ctx, cancel := context.WithCancel(m.ctx)
	r.mu.Lock()
	r.cancel = cancel
	r.mu.Unlock()
	m.wg.Add(1)
	// Lives until the run has ended and its containers are gone.
	go func() {
		defer m.wg.Done()
		defer cancel()
		m.execute(ctx, r)
		m.mu.Lock()
		delete(m.running, r)
		m.mu.Unlock()
		m.forget(r)
		m.schedule()
	}()
}

// expire refuses a run that waited in the queue as long as a run may.
func (m *Manager) expire(r *Run) {
	m.mu.Lock()
	removed := m.queue.Remove(r)
	m.mu.Unlock()
	if !removed {
		return
	}
	m.endQueued(r, StateRefused, fmt.Sprintf("refused: waited %s in the queue, the longest a run may wait on this server; nothing was started. "+
		"Other experiments held the host all that time: try again when it is quieter.", m.opts.MaxWait))
	m.schedule()
}

// endQueued ends a run that never started.
func (m *Manager) endQueued(r *Run, s State, msg string) {
	r.expiry.Stop()
	r.mu.Lock()
	r.view.State, r.view.Error, r.view.QueuePosition = s, msg, 0
	r.view.EndedAt = time.Now().UTC()
	for i := range r.view.Lanes {
		r.view.Lanes[i].State = LaneSkipped
	}
	r.mu.Unlock()
	r.publishView()
	r.save()
	r.hub.Close()
	close(r.done)
	m.forget(r)
}

// Stop asks a run to stop: a queued run leaves the queue; a running run's
// containers are killed and it ends as "stopped", with what was measured
// so far kept.
func (m *Manager) Stop(id string) error {
	m.mu.Lock()
	r, ok := m.runs[id]
	removed := ok && m.queue.Remove(r)
	m.mu.Unlock()
	if !ok {
		if _, err := m.load(id); err == nil {
			return nil // already ended
		}
		return fmt.Errorf("%w %q", ErrNoRun, id)
	}
	if removed {
		m.endQueued(r, StateStopped, "stopped while it waited in the queue; nothing was started")
		m.schedule()
		return nil
	}
	r.mu.Lock()
	if !r.view.State.Ended() {
		r.stopped = true
	}
	cancel := r.cancel
	r.mu.Unlock()
	cancel()
	return nil
}

// ClearQueue ends every queued run (running ones go on) and says how many.
func (m *Manager) ClearQueue(why string) int {
	m.mu.Lock()
	var queued []*Run
	for {
		r, ok := m.queue.Next(nil)
		if !ok {
			break
		}
		queued = append(queued, r)
	}
	m.mu.Unlock()
	for _, r := range queued {
		m.endQueued(r, StateStopped, why)
	}
	return len(queued)
}

// Owner is the participant who submitted a run in memory ("" if unknown).
func (m *Manager) Owner(id string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[id]
	if !ok {
		return "", false
	}
	return r.participant, true
}

// Shutdown ends queued runs, stops running ones, waits for them to clean
// up (or for ctx), then removes any container of its runs still on the
// engine.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.cancel()
	m.ClearQueue("the server shut down before this run started")
	waited := make(chan struct{})
	go func() { m.wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-ctx.Done():
	}
	// Only this manager's runs: another instance on the same engine (a
	// test, a second dashboard) keeps its containers.
	m.mu.Lock()
	runs := append([]*Run(nil), m.order...)
	m.mu.Unlock()
	var errs []error
	for _, r := range runs {
		if _, err := Reap(context.WithoutCancel(ctx), m.eng, r.id, m.log); err != nil {
			errs = append(errs, err)
		}
	}
	if m.opts.Store != nil {
		if err := m.opts.Store.Sync(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
