package runner

import (
	"context"
	"sync"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/models"
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
			sampled(time.Since(now))
		}
	}
}

// sampleOnce reads the lanes due at the tick now and publishes their
// samples as one batch.
func (x *execution) sampleOnce(now time.Time) {
	r := x.r
	var jobs []sampleJob
	r.mu.Lock()
	start := r.st.start
	for i, l := range r.st.lanes {
		if l.reader != nil && now.Sub(l.lastAsk) >= l.every-r.interval/2 {
			jobs = append(jobs, sampleJob{i: i, rd: l.reader, progress: l.progress, pid: l.pid})
		}
	}
	r.mu.Unlock()
	// The lanes' run delay, once a second.
	var delays *hostLoad
	if x.load != nil && x.load.due() {
		delays = x.load
	}
	readJobs(jobs, now, delays)
	var lanesNs uint64 // the lanes' CPU since their last readings, for the host's load
	var batch []engine.Sample
	stalled := false // a lane's reports stopped at this tick: the page says so
	r.mu.Lock()
	phased := r.bounds != nil
	for k := range jobs {
		j := &jobs[k]
		l := r.st.lanes[j.i]
		if l.reader != j.rd {
			continue // the lane ended meanwhile
		}
		l.lastAsk = j.asked
		if j.err != nil {
			continue
		}
		if j.fresh {
			l.progressed(j.report)
		}
		was := l.stalledAt
		if s, ns, ok := l.record(j, start, phased, &r.st.jitter, r.interval); ok {
			batch = append(batch, s)
			lanesNs += ns
		}
		stalled = stalled || was == 0 && l.stalledAt != 0
	}
	moved := len(batch) > 0 && r.st.guide.advance(r.st.lanes, now.Sub(start).Seconds()) || stalled
	lanesNs += r.st.unsampledNs
	r.st.unsampledNs = 0
	r.mu.Unlock()
	if len(batch) > 0 {
		r.pub.publish(Message{Type: KindSamples, Samples: batch, SentUs: time.Now().UnixMicro()})
	}
	if x.load != nil {
		if hs, ok := x.load.sample(now.Sub(start).Seconds(), lanesNs); ok {
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

// sampleJob is one lane's reading at a tick: what to read, and what was
// read.
type sampleJob struct {
	i        int
	rd       engine.Reader
	progress *engine.ProgressReader
	pid      int

	asked  time.Time // as the reader was called
	c      engine.Counters
	err    error
	report wire.Progress
	fresh  bool // a progress report newer than the last
}

// readJobs takes each job's reading, outside the run's lock: its
// progress, its counters, and its threads' run delay (where load is given:
// once a second). Cgroup files are read in turn, in well under a millisecond
// each; engine stats calls, which can take a second, all at once.
func readJobs(jobs []sampleJob, now time.Time, load *hostLoad) {
	for k := range jobs {
		if p := jobs[k].progress; p != nil {
			jobs[k].report, jobs[k].fresh = p.Read()
		}
	}
	var reads sync.WaitGroup
	for k := range jobs {
		j := &jobs[k]
		j.asked = time.Now()
		if _, slow := j.rd.(*engine.EngineReader); !slow {
			j.c, j.err = j.rd.Read()
			continue
		}
		reads.Add(1)
		// Lives for one engine stats call (at most 5 s).
		go func() {
			defer reads.Done()
			j.c, j.err = j.rd.Read()
		}()
	}
	reads.Wait()
	if load != nil {
		for k := range jobs {
			if j := &jobs[k]; j.err == nil && j.pid > 0 {
				j.c.RunDelayNs, j.c.HasRunDelay = load.runDelay(j.pid, now)
			}
		}
		load.sweep(now)
	}
}

// record makes the lane's sample from its reading against its last one,
// keeps it, and counts how far its interval strayed in jit; the run's lock
// is held. ok is false for a lane's first
// reading, and for one whose counters fell (no later reading of the
// lane's: its totals would be left short); cpuNs is the lane's CPU since
// its last reading.
func (l *laneState) record(j *sampleJob, start time.Time, phased bool, jit *jitter, interval time.Duration) (s engine.Sample, cpuNs uint64, ok bool) {
	c := j.c
	if l.hasPrev && c.Fell(l.prev) {
		return s, 0, false
	}
	wait, waitOver, waited := l.delay(c)
	if l.hasPrev {
		cpuNs = c.CPUNs - l.prev.CPUNs
		p := engine.Progress{Throughput: l.rate, WorkIOPS: l.liveIOPS, GOMAXPROCS: l.gomaxprocs}
		if l.latency != nil {
			p.LatencyMs, p.Failures = l.latency, l.failures
			l.latency = nil // each interval's latency goes out once
		}
		t := c.At.Sub(start).Seconds()
		if l.reported && j.asked.Sub(l.reportedAt) > progressStale {
			p = engine.Progress{Stalled: true, GOMAXPROCS: l.gomaxprocs}
			if l.stalledAt == 0 {
				l.stalledAt = l.reportedAt.Sub(start).Seconds()
			}
		}
		s = engine.MakeSample(j.i, t, l.prev, c, p)
		if waited {
			s.Wait, s.WaitOver = &wait, waitOver
		}
		cs := models.CoreSample{T: s.T, DT: s.DT, Cores: s.CPU, IOBps: s.IOBytesPerS(),
			Periods: float64(s.Periods), ThrottledPeriods: float64(s.ThrottledPeriods), ThrottledMs: s.ThrottledMs(), MemBytes: s.MemBytes(),
			GOMAXPROCS: float64(s.GOMAXPROCS)}
		if s.LatencyMs != nil {
			cs.P99Ms = s.LatencyMs.P99
		}
		l.samples = append(l.samples, cs)
		if phased && l.reported && !p.Stalled {
			// Phase means count only samples after the workload's first
			// report of its rate.
			l.phased = append(l.phased, s)
		}
		ok = true
	}
	// The interval from the lane's first reading, taken as it started, to
	// its first tick is off the clock by design.
	if l.hasPrev && l.every == 0 && l.ticked {
		jit.add(c.At.Sub(l.lastRead), interval)
	}
	l.prev, l.hasPrev, l.lastRead, l.ticked = c, true, c.At, true
	return s, cpuNs, ok
}

// progressStale is how long a running workload may go without reporting
// its progress (it reports every workload.ProgressInterval) before its
// samples say its reports stopped: a lane whose log stream was lost, or
// whose process no longer runs its reporter.
const progressStale = 5 * time.Second

// delay counts the run delay in c, where it was read, into the lane's
// wait: wait is the lane's threads' waiting in milliseconds per second
// since its previous reading, waitOver seconds before; ok is false where
// there is no such figure.
func (l *laneState) delay(c engine.Counters) (wait, waitOver float64, ok bool) {
	if !c.HasRunDelay {
		return 0, 0, false
	}
	prevNs, prevAt, had := l.delayNs, l.delayAt, l.delayRead
	l.delayNs, l.delayAt, l.delayRead = c.RunDelayNs, c.At, true
	if !had || c.RunDelayNs < prevNs {
		return 0, 0, false
	}
	d := c.RunDelayNs - prevNs
	l.waitNs, l.waitRead = l.waitNs+d, true
	waitOver = c.At.Sub(prevAt).Seconds()
	if waitOver <= 0 {
		return 0, 0, false
	}
	return float64(d) / 1e6 / waitOver, waitOver, true
}
