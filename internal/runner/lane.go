package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// waitSlack is how long past its end a lane's exit is waited for: an
// engine that has killed a lane and never reports its exit holds the run
// no longer than this.
var waitSlack = time.Minute

// runLane starts lane i, follows it until it exits (killing it at the run's
// duration or when the run is stopped) and records its results.
func (x *execution) runLane(ctx context.Context, i int, log *slog.Logger) {
	r := x.r
	be := r.env.backend()
	r.mu.Lock()
	ls := r.st.lanes[i]
	id, start := ls.id, r.st.start
	r.mu.Unlock()
	// Waiting must outlive ctx: after a stop the lane is killed and its
	// exit still has to be collected. It is bounded once the lane has
	// started, waitSlack after the lane's end; until then the start ends
	// with ctx (a pod's also within five minutes).
	wctx, wcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer wcancel()
	wait := be.Wait(wctx, id)
	gate := x.barriers[i]
	if gate != nil {
		defer gate.leave(i) // a lane that never runs holds no one up
	}
	pid, ok := x.startLane(ctx, i, id, start, log)
	if !ok {
		return
	}
	// What the run's duration counts from: the run's start, or later
	// where the engine took longer to start the lane than its phase's
	// offset (a cluster's node making a pod can take most of a short
	// run), so that the lane still has its planned time to run.
	began := start
	if late := time.Now().Add(-r.plan.Lanes[i].StartAt); late.After(began) {
		began = late
	}
	if gate != nil && pid > 0 {
		// The lanes begin their work together: from then on they run,
		// and have the run's duration.
		if at := gate.arrive(ctx, i, pid); !at.IsZero() {
			x.setLane(i, func(l *laneState) { l.runningAt, l.startedAt, l.barrier = l.startedAt, at.Sub(start).Seconds(), true })
			began = at
		}
	}
	bound := time.AfterFunc(time.Until(began.Add(r.plan.Duration+waitSlack)), wcancel)
	defer bound.Stop()
	r.update(func(s *runState) { s.expect(r.plan, r.env.Host.ModelHost()) })

	lctx, lcancel := context.WithCancel(wctx)
	defer lcancel()
	foreign := r.plan.Lanes[i].Workload.Kind == specs.KindImage
	stderrc := make(chan []byte, 1)
	// The log follower lives until the container's output ends (it
	// exits), or until lcancel; it hands back what the lane wrote to
	// stderr only when it has stopped writing it.
	go func() { stderrc <- x.followLogs(lctx, ls, id, !foreign) }()

	exit, timedOut, stopped := x.awaitExit(ctx, i, id, start, began, wait, log)
	// The lane ended when the engine said so, not when its log stream
	// has drained.
	ended := time.Since(start).Seconds()
	var stderr []byte
	select {
	case stderr = <-stderrc:
	case <-time.After(5 * time.Second):
		lcancel()
		stderr = <-stderrc
	}
	x.endLane(i, exit, laneEnd{at: ended, timedOut: timedOut, stopped: stopped, foreign: foreign, stderr: stderr})
	r.update(func(s *runState) { s.expect(r.plan, r.env.Host.ModelHost()) })
}

// startLane starts lane i when its phase and its service say, opens its
// counters, its kernel view and its progress, and marks it running; ok is
// false for a lane that never started (skipped, or failed to start).
func (x *execution) startLane(ctx context.Context, i int, id string, start time.Time, log *slog.Logger) (pid int, ok bool) {
	r := x.r
	be := r.env.backend()
	pl := r.plan.Lanes[i]
	if !x.awaitStartAt(ctx, i, start) {
		x.setLane(i, func(l *laneState) { l.move(LaneSkipped) })
		return 0, false
	}
	if t := pl.Target; t >= 0 {
		// A load lane joins its service's network namespace, which exists
		// only while the service runs.
		if err := x.awaitRunning(ctx, t); err != nil {
			x.setLane(i, func(l *laneState) { l.move(LaneExited); l.err = err.Error() })
			return 0, false
		}
	}
	asked := time.Now()
	pid, err := be.Start(ctx, id)
	if err != nil {
		x.setLane(i, func(l *laneState) { l.move(LaneExited); l.err = err.Error() })
		return 0, false
	}
	r.env.startLatency.Store(int64(time.Since(asked)))
	started := time.Since(start).Seconds()
	rd, every, source := be.OpenReader(ctx, r.env.Host, id, pid, log)
	r.mu.Lock()
	applied := r.st.lanes[i].applied // replaced, never changed in place, by a live change
	r.mu.Unlock()
	// Before the start barrier lets the lane's work begin: what the
	// server writes into the lane's cgroup itself.
	if err := writeOwnLimits(rd, applied); err != nil {
		x.setLane(i, func(l *laneState) { l.move(LaneExited); l.err = err.Error() })
		return 0, false
	}
	readAt := time.Now()
	first, ferr := rd.Read()
	var kernel *engine.KernelView
	if applied != nil {
		kv := engine.ReadKernelView(r.env.Host, rd, *applied, r.plan.Lanes[i].Pod)
		kernel = &kv
	}
	var progress *engine.ProgressReader
	foreign := pl.Workload.Kind == specs.KindImage
	if r.env.Host.ReadsProgressFiles() && pid > 0 && !foreign {
		progress = engine.OpenProgress(pid)
	}
	x.setLane(i, func(l *laneState) {
		l.reader, l.every, l.source, l.kernel, l.progress, l.pid = rd, every, source, kernel, progress, pid
		l.lastAsk = readAt
		if ferr == nil {
			l.prev, l.hasPrev, l.lastRead = first, true, first.At
		}
		l.move(LaneRunning)
		l.startedAt = started
	})
	return pid, true
}

// ownWriter is a reader of a lane's cgroup files that the server may write
// (engine.CgroupReader, on a local engine).
type ownWriter interface {
	WriteCPUBurst(us int64) error
	WriteMemoryHigh(n int64) error
}

// writeOwnLimits gives a lane the limits no engine applies, its CFS burst
// and its memory.high, through the reader of its cgroup files where the
// server can write them; validation refuses them elsewhere
// (engine.Capabilities' CPUBurst and MemoryHigh).
func writeOwnLimits(rd engine.Reader, applied *specs.Resources) error {
	if applied == nil || applied.CPUBurstUs == 0 && applied.MemoryHigh == 0 {
		return nil
	}
	w, ok := rd.(ownWriter)
	if !ok {
		return errors.New("the lane's cgroup files are not the server's to write here")
	}
	if us := applied.CPUBurstUs; us > 0 {
		if err := w.WriteCPUBurst(us); err != nil {
			return fmt.Errorf("cpu_burst: %w", err)
		}
	}
	if n := applied.MemoryHigh; n > 0 {
		if err := w.WriteMemoryHigh(n); err != nil {
			return fmt.Errorf("memory_high: %w", err)
		}
	}
	return nil
}

// laneEnd is how a lane ended: when, whether its time ran out or it was
// stopped, whether it was a facilitator's service, and its stderr.
type laneEnd struct {
	at                float64
	timedOut, stopped bool
	foreign           bool
	stderr            []byte
}

// endLane records how lane i ended: its exit, its times and totals, and
// whether it completed; and closes its readers.
func (x *execution) endLane(i int, exit engine.Exit, e laneEnd) {
	r := x.r
	timedOut, stopped, foreign, ended, stderr := e.timedOut, e.stopped, e.foreign, e.at, e.stderr
	r.mu.Lock()
	l := r.st.lanes[i]
	l.move(LaneExited)
	l.endedAt, l.timedOut = ended, timedOut
	if exit.HasCode {
		code := exit.Code
		l.exitCode = &code
	}
	if exit.Err != nil {
		l.err = "engine: wait: " + exit.Err.Error()
	}
	l.oomKilled = l.oomKilled || exit.OOMKilled
	if s, f := exit.StartedAt, exit.FinishedAt; !s.IsZero() && f.After(s) {
		l.wall = f.Sub(s).Seconds()
	}
	l.totals = l.prev
	l.totals.Periods, l.totals.ThrottledPeriods = l.prev.Throttling()
	l.user, l.sys = l.prev.CPUSplit()
	l.completed = l.summary != nil && l.exitCode != nil && *l.exitCode == 0 && !timedOut && !stopped
	if foreign {
		// A facilitator's service prints no summary: it completed if it
		// served until its loads had ended and was then asked to stop.
		l.completed = l.asked && exit.HasCode && !timedOut && !stopped
	}
	if s := l.summary; s != nil {
		// The workload's own account is exact; the container's times
		// include the runtime's start-up.
		l.wall, l.user, l.sys = s.WallS, s.UserS, s.SysS
		l.throughput, l.iops = s.Throughput, s.IOPS
		l.keepRuntimes(r.plan.Lanes[i].Workload.Kind, s.Runtimes)
		// What it used after its last reading is the run's, not the
		// host's foreign load: the next host sample counts it.
		if extra := (s.UserS+s.SysS)*1e9 - float64(l.prev.CPUNs); extra > 0 {
			r.st.unsampledNs += uint64(extra)
		}
	} else if l.wall > 0 {
		l.throughput = l.done / l.wall
	}
	if l.exitCode != nil && *l.exitCode != 0 && !timedOut && !stopped && !l.oomKilled && !l.asked && len(stderr) > 0 {
		l.err = string(stderr)
	}
	if c, ok := l.reader.(io.Closer); ok {
		_ = c.Close() // a cgroup reader keeps its files open
	}
	if l.progress != nil {
		_ = l.progress.Close()
	}
	l.reader, l.progress = nil, nil
	r.mu.Unlock()
}

// awaitStartAt waits for lane i's phase to begin, if it begins later in
// the run, and says whether it should start (false: the run was stopped).
// Starting a container takes the engine a few hundred milliseconds, so it
// asks that much earlier: the latest start's latency, at most a second,
// read a second before the offset so that this run's own starts count.
func (x *execution) awaitStartAt(ctx context.Context, i int, start time.Time) bool {
	r := x.r
	d := r.plan.Lanes[i].StartAt
	if d <= 0 {
		return true
	}
	for _, early := range []bool{true, false} {
		lead := min(r.env.latency(), time.Second)
		if early {
			lead = 2 * time.Second
		}
		t := time.NewTimer(time.Until(start.Add(d - lead)))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
	}
	return true
}

// awaitExit follows a started lane until its container exits: it kills it
// at the run's duration or when the run is stopped, and asks it to stop at
// the end of its phase.
func (x *execution) awaitExit(ctx context.Context, i int, id string, start, began time.Time, wait <-chan engine.Exit,
	log *slog.Logger) (exit engine.Exit, timedOut, stopped bool) {
	r := x.r
	// A sequential lane has the run's duration to itself; a parallel one
	// ends with the run, whose duration counts from its start barrier
	// where its lanes wait at one (began: runLane).
	limit := r.plan.Duration
	if r.plan.Mode == specs.Parallel {
		limit = time.Until(began.Add(r.plan.Duration))
	}
	timer := time.NewTimer(limit)
	defer timer.Stop()
	var stopAt, grace <-chan time.Time
	if d := r.plan.Lanes[i].StopAt; d > 0 {
		t := time.NewTimer(time.Until(start.Add(d)))
		defer t.Stop()
		stopAt = t.C
	}
	be := r.env.backend()
	stop := ctx.Done()
	for {
		select {
		case exit = <-wait:
			return exit, timedOut, stopped
		case <-timer.C:
			timedOut = true
			be.Signal(id, engine.SigKill, log)
		case <-stopAt:
			// The end of the lane's phase: asked to stop, the workload
			// prints its summary and exits; it gets a few seconds.
			stopAt, grace = nil, time.After(5*time.Second)
			be.Signal(id, engine.SigTerm, log)
		case <-grace:
			grace = nil
			be.Signal(id, engine.SigKill, log)
		case <-stop:
			stopped, stop = true, nil // keep waiting for the exit
			be.Signal(id, engine.SigKill, log)
		}
	}
}

// awaitRunning waits until lane t runs, failing if it ends first.
func (x *execution) awaitRunning(ctx context.Context, t int) error {
	r := x.r
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		r.mu.Lock()
		st := r.st.lanes[t].state
		r.mu.Unlock()
		switch {
		case st == LaneRunning:
			return nil
		case st.Over():
			return fmt.Errorf("its service lane %q is not running", r.plan.Lanes[t].Name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// stopIdleService stops the http lane that load lane i targeted once every
// lane loading it has ended: SIGTERM, on which the service prints its
// summary and exits cleanly.
func (x *execution) stopIdleService(i int, log *slog.Logger) {
	r := x.r
	t := r.plan.TargetOf(i)
	if t < 0 {
		return
	}
	r.mu.Lock()
	for j := range r.plan.Lanes {
		if r.plan.TargetOf(j) == t && !r.st.lanes[j].state.Over() {
			r.mu.Unlock()
			return
		}
	}
	id, running := r.st.lanes[t].id, r.st.lanes[t].state == LaneRunning
	foreign := r.plan.Lanes[t].Workload.Kind == specs.KindImage
	if running {
		r.st.lanes[t].asked = true
	}
	r.mu.Unlock()
	if !running {
		return
	}
	be := r.env.backend()
	be.Signal(id, engine.SigTerm, log)
	if foreign {
		// A facilitator's server as its container's first process
		// ignores SIGTERM unless it handles it: it gets a few seconds.
		time.AfterFunc(5*time.Second, func() { be.Signal(id, engine.SigKill, log) })
	}
}
