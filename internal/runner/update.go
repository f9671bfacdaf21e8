package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// Errors of a live change that are not about its values.
var (
	ErrNoLane         = errors.New("no such lane")
	ErrLaneNotRunning = errors.New("the lane is not running: limits change only while it runs")
)

// laneLimits is what a lane of plan asked for and what the engine applies
// to it now, for checking a live change before it is made. Run.mu is
// held.
func (s *runState) laneLimits(plan specs.Plan, lane int) (requested, applied specs.Resources, err error) {
	if lane < 0 || lane >= len(s.lanes) {
		return requested, applied, ErrNoLane
	}
	l := s.lanes[lane]
	if l.state != LaneRunning || l.applied == nil {
		return requested, applied, ErrLaneNotRunning
	}
	return plan.Lanes[lane].Resources, *l.applied, nil
}

// resources are the lanes of plan's limits now: what the engine applied,
// where a lane's container exists, else what the lane asked for. Run.mu
// is held.
func (s *runState) resources(plan specs.Plan) []specs.Resources {
	out := make([]specs.Resources, len(s.lanes))
	for i, l := range s.lanes {
		out[i] = plan.Lanes[i].Resources
		if l.applied != nil {
			out[i] = *l.applied
		}
	}
	return out
}

// Updater is a backend whose lanes' limits change in place through the
// engine's container update: engine.Docker.
type Updater interface {
	Update(ctx context.Context, id string, delta specs.Resources) (engine.Updated, error)
}

// UpdateLimits changes a running lane's limits through the engine's
// container update (docker update), reads back what the engine applied, and
// records the change in the run. admit, if not nil, is asked first whether
// the run's lanes may have the limits they would have after the change
// (every lane's, the changed one's as it would be); its error refuses the
// change. A change that fails validation, admit or the engine
// leaves the lane as it was; the returned specs.Errors say why, in
// the engine's words where it gave them.
func (r *Run) UpdateLimits(ctx context.Context, lane int, change specs.Limits, admit func(after []specs.Resources) error) (ChangeRecord, error) {
	var up Updater
	switch be := r.env.backend().(type) {
	case Resizer:
		return resize(ctx, r, be, lane, change, admit)
	case Updater:
		up = be
	default:
		return ChangeRecord{}, specs.Errors{{Lane: lane, Field: "limits", Message: "this run's engine changes no limits while a lane runs"}}
	}
	r.mu.Lock()
	requested, current, err := r.st.laneLimits(r.plan, lane)
	r.mu.Unlock()
	if err != nil {
		return ChangeRecord{}, err
	}
	r.mu.Lock()
	id := r.st.lanes[lane].id
	r.mu.Unlock()
	host := r.env.Host
	delta, errs := specs.ResolveChange(current, change, r.env.Experiments())
	if errs != nil {
		for i := range errs {
			errs[i].Lane = lane
		}
		return ChangeRecord{}, errs
	}
	if delta.Memory > 0 && requested.MemorySwap == 0 && host.Caps.MemorySwap.Supported {
		// The lane left swap to Docker's default, as much again as its
		// memory; keep that default rather than trip over the old one.
		delta.MemorySwap = 2 * delta.Memory
	}
	if admit != nil {
		r.mu.Lock()
		after := r.st.resources(r.plan)
		r.mu.Unlock()
		after[lane] = current.Merge(delta)
		if err := admit(after); err != nil {
			return ChangeRecord{}, err
		}
	}
	upd, err := up.Update(ctx, id, delta)
	if errors.Is(err, engine.ErrUpdateRefused) {
		return ChangeRecord{}, specs.Errors{{Lane: lane, Field: "limits", Message: err.Error()}}
	}
	if err != nil {
		return ChangeRecord{}, fmt.Errorf("runner: lane %d: %w", lane, err)
	}
	applied := upd.Applied
	rec := ChangeRecord{
		Lane: lane, Limits: change, Applied: applied, Warnings: upd.Warnings,
		DockerUpdate: specs.DockerUpdate(id[:min(12, len(id))], delta),
	}
	return r.changed(rec, &applied, nil), nil
}

// changed records a live change made to a lane: with applied (nil: the
// lane keeps the limits it had), the lane's limits are those now, its
// reader reads the new memory limit in its next sample, and its kernel
// view is read again, for a pod with pod; the guide's step and the
// prediction follow.
func (r *Run) changed(rec ChangeRecord, applied *specs.Resources, pod *specs.Pod) ChangeRecord {
	lane := rec.Lane
	rd, kernel := readKernel(r, lane, applied, pod)
	r.mu.Lock()
	rec.AtSeconds = time.Since(r.st.start).Seconds()
	l := r.st.lanes[lane]
	if applied != nil {
		l.applied = applied
		if pod != nil {
			l.pod = pod
		}
	}
	if kernel != nil && l.reader == rd {
		l.kernel = kernel
	}
	r.st.changes = append(r.st.changes, rec)
	r.st.guide.changed(r.st.lanes, lane, *l.applied, rec.AtSeconds)
	r.mu.Unlock()
	r.update(func(s *runState) { s.expect(r.plan, r.env.Host.ModelHost()) })
	return rec
}

// readKernel reads back from a lane's cgroup files the limits it now has
// (nil: none to read), and says which reader it read them through: the
// lane keeps the view only while that reader is still its own.
func readKernel(r *Run, lane int, applied *specs.Resources, pod *specs.Pod) (engine.Reader, *engine.KernelView) {
	r.mu.Lock()
	rd := r.st.lanes[lane].reader
	r.mu.Unlock()
	if rd == nil || applied == nil {
		return rd, nil
	}
	engine.Refresh(rd)
	kv := engine.ReadKernelView(r.env.Host, rd, *applied, pod)
	return rd, &kv
}
