package runner

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/workload/wire"
)

// A start barrier lets a group's lanes begin their work together: an
// engine starts containers (and a cluster pods) one after another, a few
// hundred milliseconds to seconds apart, so each lane's workload waits for
// a file in its own tmpfs, which the server writes into every lane,
// through /proc/<pid>/root, when the last of them runs. The file names an
// instant a little ahead (beginLead), on the host clock every lane
// shares, and each workload sleeps until it: the lanes are let go by the
// kernel's timers at one instant, not one by one as the files are
// written. Each workload reports the instant its work began and how long
// it then waited for a CPU; their spreads are the run's start skew.
//
// Its lock guards only its state: the waits for the ready files and the
// writes through /proc are done outside it, by whichever lane or leaver
// found the barrier complete (release), on a snapshot of the lanes.
type barrier struct {
	mu        sync.Mutex
	waiting   map[int]bool // lanes not yet running or gone
	pids      map[int]int  // running lanes' first processes
	releasing bool         // a release is under way, or done
	release   chan struct{}
	at        time.Time // the instant the lanes were let go at
	log       *slog.Logger
}

// barrierWait bounds how long running lanes wait for the others to start
// before they are let go (the workload's own bound is wire.BeginWait).
const barrierWait = 20 * time.Second

// barrierLanes are the lanes of each group that begin together: at the
// group's start, neither a service nor its load (a service serves as soon
// as it runs, and its load waits for it), two or more of them.
func barrierLanes(plan specs.Plan) map[int]bool {
	out := map[int]bool{}
	for _, group := range plan.Groups {
		var in []int
		for _, i := range group {
			l := plan.Lanes[i]
			if l.StartAt == 0 && l.Target < 0 && !l.Workload.Service() && l.Workload.Kind != specs.KindLoad {
				in = append(in, i)
			}
		}
		if len(in) >= 2 {
			for _, i := range in {
				out[i] = true
			}
		}
	}
	return out
}

func newBarrier(lanes []int, log *slog.Logger) *barrier {
	b := &barrier{waiting: map[int]bool{}, pids: map[int]int{}, release: make(chan struct{}), log: log}
	for _, i := range lanes {
		b.waiting[i] = true
	}
	return b
}

// arrive says lane i runs as pid and waits until every lane of the
// barrier runs or has gone (or ctx ends, or barrierWait passes); it
// returns when the lanes were let go.
func (b *barrier) arrive(ctx context.Context, i, pid int) time.Time {
	b.mu.Lock()
	delete(b.waiting, i)
	b.pids[i] = pid
	if !b.at.IsZero() {
		// Let go already (the others did not wait for it): it begins now.
		b.mu.Unlock()
		now := time.Now()
		b.signal(pid, now)
		return now
	}
	lanes, ok := b.completeLocked()
	b.mu.Unlock()
	if ok {
		b.releaseAll(ctx, lanes)
	}
	t := time.NewTimer(barrierWait)
	defer t.Stop()
	select {
	case <-b.release:
	case <-t.C:
		b.mu.Lock()
		b.log.Warn("start barrier: lanes still starting, letting the others go", slog.Int("starting", len(b.waiting)))
		b.waiting = map[int]bool{}
		lanes, ok := b.completeLocked()
		b.mu.Unlock()
		if ok {
			b.releaseAll(ctx, lanes)
		}
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.at
}

// leave says lane i will not run (it failed to start, or the run was
// stopped first); a lane that arrived is not affected.
func (b *barrier) leave(i int) {
	b.mu.Lock()
	if !b.waiting[i] {
		b.mu.Unlock()
		return
	}
	delete(b.waiting, i)
	lanes, ok := b.completeLocked()
	b.mu.Unlock()
	if ok {
		b.releaseAll(context.Background(), lanes)
	}
}

// completeLocked says whether the barrier is complete (no lane still
// starting) and no release has begun; if so it marks the release begun
// and returns the running lanes' pids to let go. b.mu is held.
func (b *barrier) completeLocked() (map[int]int, bool) {
	if len(b.waiting) > 0 || b.releasing {
		return nil, false
	}
	b.releasing = true
	lanes := make(map[int]int, len(b.pids))
	for i, pid := range b.pids {
		lanes[i] = pid
	}
	return lanes, true
}

// releaseAll lets the lanes go: it waits (at most readyWait, or until ctx
// ends) for each workload to say it waits, writes the begin file naming
// one instant into each, and then, under the lock again, records the
// instant, lets the waiting lanes return, and signals any lane that ran
// meanwhile.
func (b *barrier) releaseAll(ctx context.Context, lanes map[int]int) {
	// Every workload waits once it has written its ready file: a lane
	// still starting its runtime would begin late.
	began := time.Now()
	rctx, cancel := context.WithTimeout(ctx, readyWait)
	unready := 0
	for _, pid := range lanes {
		if !waitForFile(rctx, "/proc/"+strconv.Itoa(pid)+"/root"+wire.ReadyPath) {
			unready++
		}
	}
	cancel()
	at := time.Now().Add(beginLead(len(lanes)))
	for _, pid := range lanes {
		b.signal(pid, at)
	}
	if late := time.Since(at); late > 0 {
		b.log.Warn("start barrier: the begin files were written after their instant", slog.Duration("late", late))
	}
	b.mu.Lock()
	b.at = at
	var meanwhile []int
	for i, pid := range b.pids {
		if _, ok := lanes[i]; !ok {
			meanwhile = append(meanwhile, pid)
		}
	}
	close(b.release)
	b.mu.Unlock()
	for _, pid := range meanwhile {
		b.signal(pid, time.Now())
	}
	b.log.Info("start barrier: lanes let go", slog.Int("lanes", len(lanes)), slog.Int("not ready", unready),
		slog.Duration("waited for ready", at.Sub(began)))
}

// waitForFile says whether the file exists before ctx ends. It looks
// after a millisecond, and then twice as long each time up to
// readyPollMax: a workload writes it within milliseconds of its start,
// but one under a small quota takes seconds, and looking every
// millisecond for those seconds cost more CPU than the run's sampling.
func waitForFile(ctx context.Context, path string) bool {
	wait := time.Millisecond
	for {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		wait = min(2*wait, readyPollMax)
	}
}

// readyPollMax is the longest a barrier waits between two looks for a
// workload's ready file: the lanes are let go at most this late.
const readyPollMax = 16 * time.Millisecond

// beginLead is how far ahead of its writes a barrier's instant lies: the
// time to write n lanes' files through their mount namespaces (1 to 2.5
// ms each, measured on the project's 2-core machine) and a margin.
func beginLead(n int) time.Duration { return 20*time.Millisecond + time.Duration(n)*3*time.Millisecond }

// readyWait bounds how long the barrier waits for its running lanes'
// workloads to say they wait.
const readyWait = 5 * time.Second

// signal writes the begin file, naming the instant at, into the lane
// whose first process is pid: written beside it and renamed, so that the
// workload never reads it half written, and following no symlink the
// container put in its way (engine.WriteInContainer).
func (b *barrier) signal(pid int, at time.Time) {
	if err := engine.WriteInContainer(pid, wire.BeginPath, wire.FormatBegin(at)); err != nil {
		// The workload begins by itself after wire.BeginWait.
		b.log.Warn("start barrier: cannot signal a lane", slog.Int("pid", pid), slog.Any("err", err))
	}
}
