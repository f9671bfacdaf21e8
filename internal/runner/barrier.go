package runner

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/limitlab/limitlab/internal/experiments"
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
type barrier struct {
	mu      sync.Mutex
	waiting map[int]bool // lanes not yet running or gone
	pids    map[int]int  // running lanes' first processes
	release chan struct{}
	at      time.Time // when the files were written
	log     *slog.Logger
}

// barrierWait bounds how long running lanes wait for the others to start
// before they are let go (the workload's own bound is wire.BeginWait).
const barrierWait = 20 * time.Second

// barrierLanes are the lanes of each group that begin together: at the
// group's start, neither a service nor its load (a service serves as soon
// as it runs, and its load waits for it), two or more of them.
func barrierLanes(plan experiments.Plan) map[int]bool {
	out := map[int]bool{}
	for _, group := range plan.Groups {
		var in []int
		for _, i := range group {
			l := plan.Lanes[i]
			if l.StartAt == 0 && l.Target < 0 && !l.Workload.Service() && l.Workload.Kind != experiments.KindLoad {
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
		b.signalLocked(pid, time.Now())
		defer b.mu.Unlock()
		return time.Now()
	}
	b.maybeReleaseLocked()
	b.mu.Unlock()
	t := time.NewTimer(barrierWait)
	defer t.Stop()
	select {
	case <-b.release:
	case <-t.C:
		b.mu.Lock()
		b.log.Warn("start barrier: lanes still starting, letting the others go", slog.Int("starting", len(b.waiting)))
		b.waiting = map[int]bool{}
		b.maybeReleaseLocked()
		b.mu.Unlock()
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
	defer b.mu.Unlock()
	if b.waiting[i] {
		delete(b.waiting, i)
		b.maybeReleaseLocked()
	}
}

// maybeReleaseLocked writes the begin file into every running lane once
// none is still starting. b.mu is held.
func (b *barrier) maybeReleaseLocked() {
	if len(b.waiting) > 0 || !b.at.IsZero() {
		return
	}
	// Every workload waits once it has written its ready file: a lane
	// still starting its runtime would begin late.
	began := time.Now()
	deadline := began.Add(readyWait)
	unready := 0
	for _, pid := range b.pids {
		ready := "/proc/" + strconv.Itoa(pid) + "/root" + wire.ReadyPath
		for {
			if _, err := os.Stat(ready); err == nil {
				break
			}
			if time.Now().After(deadline) {
				unready++
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	at := time.Now().Add(beginLead(len(b.pids)))
	for _, pid := range b.pids {
		b.signalLocked(pid, at)
	}
	if late := time.Since(at); late > 0 {
		b.log.Warn("start barrier: the begin files were written after their instant", slog.Duration("late", late))
	}
	b.at = at
	close(b.release)
	b.log.Info("start barrier: lanes let go", slog.Int("lanes", len(b.pids)), slog.Int("not ready", unready),
		slog.Duration("waited for ready", at.Sub(began)))
}

// beginLead is how far ahead of its writes a barrier's instant lies: the
// time to write n lanes' files through their mount namespaces (1 to 2.5
// ms each, measured on the project's 2-core machine) and a margin.
func beginLead(n int) time.Duration { return 20*time.Millisecond + time.Duration(n)*3*time.Millisecond }

// readyWait bounds how long the barrier waits for its running lanes'
// workloads to say they wait.
const readyWait = 5 * time.Second

// signalLocked writes the begin file, naming the instant at, into the
// lane whose first process is pid: written beside it and renamed, so
// that the workload never reads it half written. b.mu is held.
func (b *barrier) signalLocked(pid int, at time.Time) {
	p := "/proc/" + strconv.Itoa(pid) + "/root" + wire.BeginPath
	err := os.WriteFile(p+".new", wire.FormatBegin(at), 0o644)
	if err == nil {
		err = os.Rename(p+".new", p)
	}
	if err != nil {
		// The workload begins by itself after wire.BeginWait.
		b.log.Warn("start barrier: cannot signal a lane", slog.String("path", p), slog.Any("err", err))
	}
}
