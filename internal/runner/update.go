package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/moby/moby/client"
)

// Errors of a live change that are not about its values.
var (
	ErrNoRun          = errors.New("no such run")
	ErrNoLane         = errors.New("no such lane")
	ErrLaneNotRunning = errors.New("the lane is not running: limits change only while it runs")
)

// UpdateLimits changes a running lane's limits through the engine's
// container update (docker update), reads back what the engine applied, and
// records the change in the run. A change that fails validation or that the
// engine refuses leaves the lane as it was; the returned experiments.Errors
// say why, in the engine's words where it gave them.
func (m *Manager) UpdateLimits(ctx context.Context, runID string, lane int, change experiments.Limits) (ChangeRecord, error) {
	// Only a run in memory can be running: an ended one is not loaded
	// from the store just to say so.
	m.mu.Lock()
	r, ok := m.runs[runID]
	m.mu.Unlock()
	if !ok {
		if _, stored := m.View(runID); stored {
			return ChangeRecord{}, ErrLaneNotRunning
		}
		return ChangeRecord{}, ErrNoRun
	}
	r.mu.Lock()
	if lane < 0 || lane >= len(r.view.Lanes) {
		r.mu.Unlock()
		return ChangeRecord{}, ErrNoLane
	}
	l := r.view.Lanes[lane]
	id := r.lanes[lane].id
	r.mu.Unlock()
	if l.State != LaneRunning || l.Applied == nil {
		return ChangeRecord{}, ErrLaneNotRunning
	}
	delta, errs := experiments.ResolveChange(*l.Applied, change, m.opts.Host.Experiments())
	if errs != nil {
		for i := range errs {
			errs[i].Lane = lane
		}
		return ChangeRecord{}, errs
	}
	if delta.Memory > 0 && l.Requested.MemorySwap == 0 && m.opts.Host.Limits["memory-swap"].Supported {
		// The lane left swap to Docker's default, as much again as its
		// memory; keep that default rather than trip over the old one.
		delta.MemorySwap = 2 * delta.Memory
	}
	res := engineResources(delta)
	upd, err := m.eng.ContainerUpdate(ctx, id, client.ContainerUpdateOptions{Resources: &res})
	if err != nil {
		return ChangeRecord{}, experiments.Errors{{Lane: lane, Field: "limits", Message: "engine: " + err.Error()}}
	}
	ins, err := m.eng.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return ChangeRecord{}, fmt.Errorf("runner: read back lane %d after update: %w", lane, err)
	}
	applied := appliedResources(ins.Container.HostConfig.Resources)
	rec := ChangeRecord{
		Lane: lane, Limits: change, Applied: applied, Warnings: upd.Warnings,
		DockerUpdate: experiments.DockerUpdate(l.Container, delta),
	}
	r.mu.Lock()
	rec.AtSeconds = time.Since(r.start).Seconds()
	lr := &r.view.Lanes[lane]
	lr.Applied = &applied
	lr.CPULimit = applied.CPULimit()
	r.view.Changes = append(r.view.Changes, rec)
	r.mu.Unlock()
	m.expect(r)
	return rec, nil
}
