package runner

import (
	"context"
	"log/slog"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// followResize follows a resize that kubelet left in progress or deferred
// when the change was answered (rec, of the lane's pod id, from the pod
// it was to next) until kubelet settles it or the run ends. Settled, the
// change's record says what it came to: done, its limits become the
// lane's (and a guided step waiting for it counts it); refused, the pod's
// spec is put back. It lives until then, and no longer than the run.
func followResize(r *Run, rz Resizer, rec ChangeRecord, id string, from, next specs.Pod) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-r.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	log := r.env.log().With(slog.String("run", r.id), slog.Int("lane", rec.Lane))
	res, err := rz.AwaitResize(ctx, id, next)
	if err != nil {
		log.Info("a resize in progress was not settled before its lane ended", slog.String("state", res.State), slog.Any("err", err))
		return
	}
	if res.State == engine.ResizeInfeasible || res.State == engine.ResizeError {
		if back, err := rz.Resize(ctx, id, from); err != nil || back.State != engine.ResizeDone {
			log.Warn("put a refused resize back", slog.String("state", back.State), slog.Any("err", err))
		}
	}
	var applied *specs.Resources
	var now *specs.Pod
	if res.State == engine.ResizeDone {
		p := res.Applied
		p.QoS, p.Cpuset = next.QoS, next.Cpuset
		a := p.Resources()
		applied, now = &a, &p
	}
	settled(r, rec, res, applied, now)
	log.Info("a resize in progress settled", slog.String("state", res.State), slog.String("message", res.Message))
}

// settled records what a followed resize came to in its change's record
// (found by its lane and time): kubelet's state and words, and when it
// was done, the lane's limits and pod as applied, read back from its
// cgroup files, from now on.
func settled(r *Run, rec ChangeRecord, res engine.Resized, applied *specs.Resources, pod *specs.Pod) {
	rd, kernel := readKernel(r, rec.Lane, applied, pod)
	r.update(func(s *runState) {
		at := time.Since(s.start).Seconds()
		for i := range s.changes {
			c := &s.changes[i]
			if c.Lane != rec.Lane || c.AtSeconds != rec.AtSeconds || c.Resize == nil {
				continue
			}
			z := *c.Resize
			z.State, z.Message, z.Restarts = res.State, res.Message, res.Restarts
			z.SettledAt = at
			if applied != nil {
				c.Applied, z.Applied, z.QoS = *applied, pod.Requested(), pod.QoS
			}
			c.Resize = &z
		}
		l := s.lanes[rec.Lane]
		if applied == nil || l.state != LaneRunning {
			return
		}
		l.applied, l.pod = applied, pod
		if kernel != nil && l.reader == rd {
			l.kernel = kernel
		}
		s.guide.changed(s.lanes, rec.Lane, *applied, at)
		s.expect(r.plan, r.env.Host.ModelHost())
	})
}
