package runner

import (
	"context"
	"sync"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/workload/wire"
)

// sample reads every running lane at each tick of the clock all runs
// share, and publishes one batch. It is the only reader of the lanes'
// counters, whatever the number of viewers.
func (x *execution) sample(ctx context.Context) {
	r := x.r
	ticks, done := r.env.ticks().subscribe(r.interval)
	defer done()
	if x.load != nil {
		defer x.load.close() // its /proc files
	}
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticks:
			x.sampleOnce(now)
		}
	}
}

// sampleOnce reads the lanes due at the tick now and publishes their
// samples as one batch.
func (x *execution) sampleOnce(now time.Time) {
	r := x.r
	type job struct {
		i        int
		rd       engine.Reader
		progress *engine.ProgressReader
		pid      int
	}
	var jobs []job
	r.mu.Lock()
	start := r.st.start
	for i, l := range r.st.lanes {
		if l.reader != nil && now.Sub(l.lastRead) >= l.every-r.interval/2 {
			jobs = append(jobs, job{i, l.reader, l.progress, l.pid})
		}
	}
	r.mu.Unlock()
	// Read outside the lock. Cgroup files are read in turn, in
	// well under a millisecond each; engine stats calls, which can
	// take a second, all at once.
	counters := make([]engine.Counters, len(jobs))
	errs := make([]error, len(jobs))
	type report struct {
		p   wire.Progress
		new bool
	}
	reports := make([]report, len(jobs))
	for k, j := range jobs {
		if j.progress != nil {
			reports[k].p, reports[k].new = j.progress.Read()
		}
	}
	var reads sync.WaitGroup
	for k, j := range jobs {
		if _, slow := j.rd.(*engine.EngineReader); !slow {
			counters[k], errs[k] = j.rd.Read()
			continue
		}
		reads.Add(1)
		// Lives for one engine stats call (at most 5 s).
		go func() {
			defer reads.Done()
			counters[k], errs[k] = j.rd.Read()
		}()
	}
	reads.Wait()
	if x.load != nil {
		for k, j := range jobs {
			if errs[k] == nil && j.pid > 0 {
				counters[k].RunDelayNs, counters[k].HasRunDelay = x.load.runDelay(j.pid, now)
			}
		}
		x.load.sweep(now)
	}
	var lanesNs uint64 // the lanes' CPU since their last readings, for the host's load
	var batch []engine.Sample
	r.mu.Lock()
	phased := r.bounds != nil
	for k, j := range jobs {
		l := r.st.lanes[j.i]
		if errs[k] != nil || l.reader != j.rd {
			continue // the lane ended meanwhile
		}
		if reports[k].new {
			l.progressed(reports[k].p)
		}
		c := counters[k]
		if l.hasPrev && c.Fell(l.prev) {
			// Cumulative counters never fall in one cgroup's life: a
			// reading whose counters did is no later reading of the lane's,
			// and would leave its totals short.
			continue
		}
		if l.hasPrev {
			lanesNs += c.CPUNs - l.prev.CPUNs
			if c.HasRunDelay && l.prev.HasRunDelay && c.RunDelayNs >= l.prev.RunDelayNs {
				l.waitNs, l.waitRead = l.waitNs+c.RunDelayNs-l.prev.RunDelayNs, true
			}
			p := engine.Progress{Throughput: l.rate, WorkIOPS: l.liveIOPS}
			if l.latency != nil {
				p.LatencyMs, p.Failures = l.latency, l.failures
				l.latency = nil // each interval's latency goes out once
			}
			s := engine.MakeSample(j.i, c.At.Sub(start).Seconds(), l.prev, c, p)
			batch = append(batch, s)
			l.samples = append(l.samples, experiments.CoreSample{T: s.T, DT: s.DT, Cores: s.CPU, IOBps: s.IOBytesPerS(),
				Periods: float64(s.Periods), ThrottledPeriods: float64(s.ThrottledPeriods), ThrottledMs: s.ThrottledMs(), MemBytes: s.MemBytes()})
			if phased && l.reported {
				// Phase means count only samples after the
				// workload's first report of its rate.
				l.phased = append(l.phased, s)
			}
		}
		// The interval from the lane's first reading, taken as it
		// started, to its first tick is off the clock by design.
		if l.hasPrev && l.every == 0 && l.ticked {
			r.st.jitter.add(c.At.Sub(l.lastRead), r.interval)
		}
		l.prev, l.hasPrev, l.lastRead, l.ticked = c, true, c.At, true
	}
	moved := len(batch) > 0 && r.st.guide.advance(r.st.lanes, now.Sub(start).Seconds())
	lanesNs += r.st.unsampledNs
	r.st.unsampledNs = 0
	r.mu.Unlock()
	if len(batch) > 0 {
		r.pub.publish(Message{Type: KindSamples, Samples: batch, SentUs: time.Now().UnixMicro()})
	}
	if x.load != nil {
		if hs, ok := x.load.sample(time.Now(), now.Sub(start).Seconds(), lanesNs); ok {
			r.mu.Lock()
			r.st.host = append(r.st.host, hs)
			r.mu.Unlock()
			r.pub.publish(Message{Type: KindHost, Host: &hs})
		}
	}
	if moved {
		r.publishView()
	}
}
