package runner

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// execution is one Execute of a run: the work of carrying the plan out,
// apart from the run's handle that pages and the workshop hold.
type execution struct {
	r    *Run
	load *hostLoad // nil where the engine's host is not this machine
	// barriers are the start barriers of the lanes that begin together,
	// by lane, where the server reaches the lanes' files.
	barriers map[int]*barrier
}

// Execute runs the plan to its end; ctx ending stops it as the server
// shuts down. The run reaches its final state only after its containers
// are gone, so a finished run never has any.
func (r *Run) Execute(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer close(r.done)
	defer r.hub.Close()
	log := r.env.log().With(slog.String("run", r.id))

	r.mu.Lock()
	r.cancel = cancel
	if r.st.stopped {
		cancel()
	}
	r.st.state, r.st.queuePos = StateRunning, 0
	r.mu.Unlock()
	x := &execution{r: r}
	var quiet *QuietCheck
	if r.env.Host.ReadsHostLoad() {
		// A second of the host's own load before any lane exists: a busy
		// host is said on the page while the run runs.
		r.publishView()
		pids := r.env.Host.EnginePids()
		quiet, x.load = quietCheck(ctx, pids), newHostLoad(pids, r.interval)
	}
	r.mu.Lock()
	r.st.start, r.st.quiet = time.Now(), quiet
	r.mu.Unlock()
	r.Announce()

	state, msg := x.runLanes(ctx, log)
	x.removeAll(log)
	x.finish(state, msg)
	r.pub.save(r.View(), r.participant)
}

// runLanes creates every lane's container, runs the lanes in the plan's
// mode, and says how the run ended.
func (x *execution) runLanes(ctx context.Context, log *slog.Logger) (State, string) {
	r := x.r
	if r.env.Host.ReachesLanes() {
		x.barriers = map[int]*barrier{}
		in := barrierLanes(r.plan)
		for _, group := range r.plan.Groups {
			var lanes []int
			for _, i := range group {
				if in[i] {
					lanes = append(lanes, i)
				}
			}
			if len(lanes) > 0 {
				b := newBarrier(lanes, log)
				for _, i := range lanes {
					x.barriers[i] = b
				}
			}
		}
	}
	// Every container is created before any starts, so an engine that
	// refuses one lane's config starts nothing.
	if failed := x.createAll(ctx); failed {
		r.mu.Lock()
		stopped := r.st.stopped
		r.mu.Unlock()
		switch {
		case stopped:
			return StateStopped, "stopped before its lanes started"
		case ctx.Err() != nil:
			return StateStopped, "the server is shutting down"
		}
		return StateFailed, "the engine refused a lane: nothing was started"
	}

	sctx, stopSampling := context.WithCancel(ctx)
	var sampling sync.WaitGroup
	sampling.Add(1)
	// The sampler lives until every lane has ended.
	go func() {
		defer sampling.Done()
		x.sample(sctx)
	}()

	// Groups run one after another, the lanes of a group together.
	for _, group := range r.plan.Groups {
		if ctx.Err() != nil {
			for _, i := range group {
				x.setLane(i, func(l *laneState) { l.move(LaneSkipped) })
			}
			continue
		}
		var lanes sync.WaitGroup
		for _, i := range group {
			lanes.Add(1)
			// Lives until lane i has exited and its results are in.
			go func() {
				defer lanes.Done()
				x.runLane(ctx, i, log)
				x.stopIdleService(i, log)
			}()
		}
		lanes.Wait()
	}
	stopSampling()
	sampling.Wait()

	r.mu.Lock()
	switch {
	case r.st.stopped:
		r.mu.Unlock()
		return StateStopped, ""
	case ctx.Err() != nil:
		r.mu.Unlock()
		return StateStopped, "the server is shutting down"
	}
	failed := ""
	for i, l := range r.st.lanes {
		if l.err != "" {
			failed = fmt.Sprintf("lane %d (%s): %s", i, r.plan.Lanes[i].Name, l.err)
			break
		}
	}
	r.mu.Unlock()
	if failed == "" {
		return StateDone, ""
	}
	// A lane that failed because the engine went away leaves a run
	// interrupted, not failed: what it measured is kept, and its
	// containers are removed when the engine answers again.
	if gone := x.engineGone(ctx); gone != nil {
		return StateInterrupted, "the engine stopped answering (" + gone.Error() + "): " + failed
	}
	return StateFailed, failed
}

// engineGone asks the engine for its version; the error if it does not
// answer within a few seconds.
func (x *execution) engineGone(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	return x.r.env.backend().Alive(ctx)
}

// finish gives the run its final state, phases and verdict.
func (x *execution) finish(s State, msg string) {
	r := x.r
	r.update(func(st *runState) {
		st.state, st.err = s, msg
		st.endedAt = time.Now()
		x.phasesLocked()
		x.judgeLocked()
	})
}
