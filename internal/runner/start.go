package runner

import (
	"context"
	"log/slog"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// createAll creates every lane's container and reads back what the engine
// applied. It reports whether any lane failed.
func (x *execution) createAll(ctx context.Context) bool {
	r := x.r
	// Load lanes join their service's network namespace, so services are
	// created first.
	order := make([]int, 0, len(r.plan.Lanes))
	for pass := range 2 {
		for i, l := range r.plan.Lanes {
			if (l.Target >= 0) == (pass == 1) {
				order = append(order, i)
			}
		}
	}
	// A create is not cancelled with the run: the engine would finish it
	// anyway, and the run must know the container to remove it.
	engineCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	for _, i := range order {
		if ctx.Err() != nil {
			return true // stopped: the run says so
		}
		l := r.plan.Lanes[i]
		targetID := ""
		if l.Target >= 0 {
			r.mu.Lock()
			targetID = r.st.lanes[l.Target].id
			r.mu.Unlock()
		}
		image := r.env.Image
		if l.Workload.Kind == specs.KindRuntimes {
			image = r.env.Host.RuntimesImage
		}
		c, err := r.env.backend().Create(engineCtx, engine.NewLane{Instance: r.env.Instance, RunID: r.id, Index: i, Lane: l,
			Image: image, TargetID: targetID, ProgressFile: r.env.Host.ReadsProgressFiles(), Begin: x.barriers[i] != nil, Deadline: r.plan.Duration})
		if c.ID != "" {
			r.mu.Lock()
			r.st.lanes[i].id = c.ID
			r.mu.Unlock()
		}
		if err != nil {
			x.setLane(i, func(ls *laneState) { ls.err = err.Error() })
			return true
		}
		x.setLane(i, func(ls *laneState) {
			applied := c.Applied
			ls.applied, ls.atStart, ls.warnings = &applied, applied, c.Warnings
			ls.dockerRun, ls.manifest, ls.pod = c.Command, c.Manifest, l.Pod
		})
	}
	return false
}

// removeAll removes the run's containers and volumes, even when the run was
// cancelled.
func (x *execution) removeAll(log *slog.Logger) {
	r := x.r
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r.mu.Lock()
	var ids []string
	for _, l := range r.st.lanes {
		if l.id != "" {
			ids = append(ids, l.id)
		}
	}
	r.mu.Unlock()
	r.env.backend().Remove(ctx, r.id, ids, r.plan.Lanes, log)
}
