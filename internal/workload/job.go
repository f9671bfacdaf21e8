package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/limitlab/limitlab/internal/workload/wire"
)

// job is a workload's work, what it counts, and what its progress carries.
type job struct {
	work    func(c *counter) (string, error)
	prepare func() error // done before the measurement starts
	unit    string
	rss     bool       // progress carries the resident memory
	load    *loadStats // a load's latency and failures
	ops     *counter   // IO operations, for the disk workloads
	// runtimes are the language runtimes' reports, of the runtimes
	// workload.
	runtimes *runtimeRounds
}

// jobOf is the job of cmd's kind, with the Go runtime set for it.
func jobOf(cmd *wire.Command) (job, error) {
	j := job{prepare: func() error { return nil }, unit: "MB"}
	mb, threads, events, maxPrime, seconds, rate := &cmd.MB, &cmd.Threads, &cmd.Events, &cmd.MaxPrime, &cmd.Seconds, &cmd.RateMBps
	workUS, allocKB, gomaxprocs, port, target := &cmd.WorkUS, &cmd.AllocKB, &cmd.GOMAXPROCS, &cmd.Port, &cmd.Target
	requests, concurrency, rps, burst, bs, depth, dir := &cmd.Requests, &cmd.Concurrency, &cmd.RPS, &cmd.Burst, &cmd.BS, &cmd.Depth, &cmd.Dir
	kind := cmd.Kind
	switch kind {
	case "md5":
		runtime.GOMAXPROCS(1)
		j.work = func(c *counter) (string, error) { return md5Work(*mb, c) }
	case "primes":
		runtime.GOMAXPROCS(max(*threads, 1))
		j.unit = "events"
		j.work = func(c *counter) (string, error) { return primesWork(*threads, *events, *maxPrime, c), nil }
	case "spin":
		runtime.GOMAXPROCS(max(*threads, 1))
		j.unit = "Mloops"
		j.work = func(c *counter) (string, error) { return spinWork(*threads, *seconds, c), nil }
	case "mem":
		j.rss = true
		j.work = func(c *counter) (string, error) { return memWork(*mb, *rate, *seconds, c) }
	case "http":
		if _, err := setGOMAXPROCS(*gomaxprocs); err != nil {
			return j, err
		}
		j.unit = "requests"
		j.work = func(c *counter) (string, error) { return httpWork(*port, *workUS, *allocKB, *seconds, c) }
	case "disk-write":
		j.ops = &counter{}
		j.work = func(c *counter) (string, error) { return diskWriteWork(*dir, *bs, *mb, max(*depth, 1), c, j.ops) }
	case "disk-read":
		j.ops = &counter{}
		j.prepare = func() error { return layOut(filepath.Join(*dir, "read.dat"), *mb) }
		j.work = func(c *counter) (string, error) {
			return diskReadWork(*dir, *bs, *mb, max(*depth, 1), *seconds, c, j.ops)
		}
	case "runtimes":
		// GOMAXPROCS is left to the runtime: it is one of the figures.
		j.unit = "rounds"
		j.runtimes = &runtimeRounds{}
		j.work = func(c *counter) (string, error) { return runtimesWork(*seconds, j.runtimes, c) }
	case "load":
		if *target == "" || (*requests == 0 && *seconds == 0) {
			return j, errors.New("load needs -target and -requests or -seconds")
		}
		j.unit = "requests"
		j.load = newLoadStats(*rps > 0)
		j.work = func(c *counter) (string, error) {
			return loadWork(*target, *requests, *concurrency, *burst, *rps, *seconds, j.load, c)
		}
	default:
		return j, fmt.Errorf("unknown workload %q", kind)
	}

	return j, nil
}

// reporter is where progress goes: a line each on enc, or the latest
// record rewritten at the start of the progress file, which the server
// reads there (the engine's log then carries only the summary).
func reporter(file string, enc *json.Encoder) (report func(wire.Progress), closeReport func(), err error) {
	if file == "" {
		return func(p wire.Progress) { _ = enc.Encode(p) }, func() {}, nil
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("progress file: %w", err)
	}
	var rec []byte
	return func(p wire.Progress) {
		rec = wire.AppendRecord(rec[:0], p)
		_, _ = f.WriteAt(rec, 0)
	}, func() { f.Close() }, nil
}

// progress reports the work's progress every ProgressInterval until ctx
// ends.
func (j job) progress(ctx context.Context, c *counter, start time.Time, report func(wire.Progress)) {
	t := time.NewTicker(ProgressInterval)
	defer t.Stop()
	last, lastT, lastOps := 0.0, 0.0, 0.0
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			el := now.Sub(start).Seconds()
			done := c.get()
			p := wire.Progress{T: el, Done: done, Unit: j.unit, Rate: (done - last) / (el - lastT), GOMAXPROCS: runtime.GOMAXPROCS(0)}
			if j.rss {
				p.RSSMB = residentMB()
			}
			if j.load != nil {
				p.Failures = j.load.failures.Load()
				p.Latency = j.load.take()
			}
			if j.ops != nil {
				n := j.ops.get()
				p.Ops, p.IOPS = n, (n-lastOps)/(el-lastT)
				lastOps = n
			}
			report(p)
			last, lastT = done, el
		}
	}
}
