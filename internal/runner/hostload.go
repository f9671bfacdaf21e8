package runner

import (
	"context"
	"os"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
)

// HostSample is the host's load over one tick of a run, in cores: what
// other work than the run's lanes, this server and the engine used
// (foreign), and what the hypervisor stole. The page draws it as the host
// band under the charts.
type HostSample struct {
	T            float64 `json:"t"`  // seconds since the run started
	DT           float64 `json:"dt"` // seconds since the previous host sample
	ForeignCores float64 `json:"foreign_cores"`
	StealCores   float64 `json:"steal_cores"`
}

// QuietCheck is the host's load in the second before a run's first lane
// was created; Busy when it was enough to cost a lane CPU.
type QuietCheck struct {
	ForeignCores float64 `json:"foreign_cores"`
	StealCores   float64 `json:"steal_cores"`
	Busy         bool    `json:"busy"`
}

// quietBusy is the foreign load, in cores, above which the quiet check
// calls the host busy: a quarter of a CPU taken from a lane moves most
// labs' figures by more than their tolerance.
const quietBusy = 0.25

// procRoot is where the engine host's /proc is: this machine's, for a
// local engine (engine.HostInfo.ReadsHostLoad).
const procRoot = "/proc"

// hostLoad follows the host's CPU at a run's ticks: the host's busy time,
// this server's and the engine's; and, once a second, the run delay of
// each lane's threads. It is the sampler's alone (no lock).
type hostLoad struct {
	self   int
	delays map[int]*laneDelay // by the lane's first process
	proc   *engine.ProcReader
	prev   loadReading
	has    bool
	// engine are the engine's processes: its daemons, found once, and
	// each lane's shim, found with the lane. engineNs is the CPU they
	// have used, summed: a daemon's since it was found, a shim's since it
	// started (it was started for the run); a process gone between two
	// readings moves it only by what it used before it went.
	engine   map[int]*engineProc // by pid
	engineNs uint64
	// every is how many of the run's ticks there are to a reading of the
	// run delay, and tick counts them.
	every, tick int
}

// delayEvery is how often the lanes' run delay is read: it sums a lane's
// wait over the run, and reading every thread's schedstat at every tick
// had cost as much as the lanes' own counters. (The host's figures are
// read at every tick: at a second, the CPU a lane used before its first
// reading and a shim's last work before it exits spread over whole
// seconds of the lanes' windows, and made quiet runs look busy.)
const delayEvery = time.Second

// laneDelay is a lane's run delay reader and when it was last read.
type laneDelay struct {
	rd     *engine.DelayReader
	readAt time.Time
}

// delayIdle is how long a lane's delay reader is kept unread (its lane
// ended) before its files are closed.
const delayIdle = 10 * time.Second

// newHostLoad follows the host at a run's ticks of interval, counting the
// engine's processes enginePids and the lanes' shims as the engine's.
func newHostLoad(enginePids []int, interval time.Duration) *hostLoad {
	h := &hostLoad{self: os.Getpid(), delays: map[int]*laneDelay{}, proc: engine.NewProcReader(procRoot),
		engine: map[int]*engineProc{}, every: max(1, int((delayEvery+interval-1)/max(interval, time.Millisecond)))}
	for _, pid := range enginePids {
		h.engine[pid] = &engineProc{ns: noReading}
	}
	return h
}

// noReading marks an engine process not read yet.
const noReading = ^uint64(0)

// engineProc is one of the engine's processes as last read: its CPU time,
// when, and whether it had moved since the reading before. Between a
// run's starts and ends the engine's processes mostly rest, and /proc
// counts a process's CPU in ticks of 10 ms: a process whose CPU did not
// move at its last reading is read again after restEvery, one that moved
// at every tick. What a resting process does falls in the tick it is
// next read at, at most restEvery late; what it does in its last moments
// before it exits is not counted (the kernel's count goes with it).
type engineProc struct {
	ns     uint64
	readAt time.Time
	moved  bool
}

// restEvery is how often an engine process at rest is read.
const restEvery = time.Second

// due says whether the process is read at now.
func (p *engineProc) due(now time.Time) bool {
	return p.moved || p.ns == noReading || now.Sub(p.readAt) >= restEvery
}

// due counts a tick and says whether the lanes' run delay is read at it:
// the first tick and every every-th after it.
func (h *hostLoad) due() bool {
	d := h.tick%h.every == 0
	h.tick++
	return d
}

// runDelay reads the run delay of the threads of the lane whose first
// process is pid, at now; a lane read for the first time brings its
// shim into the engine's processes.
func (h *hostLoad) runDelay(pid int, now time.Time) (uint64, bool) {
	d := h.delays[pid]
	if d == nil {
		d = &laneDelay{rd: engine.NewDelayReader(procRoot, pid)}
		h.delays[pid] = d
		if shim := engine.ProcParent(procRoot, pid); shim > 1 && shim != h.self {
			if _, known := h.engine[shim]; !known {
				// Started for this run's lane: all its CPU is the
				// engine's work for the run, its start included.
				h.engine[shim] = &engineProc{moved: true}
			}
		}
	}
	d.readAt = now
	return d.rd.Read()
}

// sweep closes the delay readers of lanes not read since delayIdle before
// now, or all of them with a zero now.
func (h *hostLoad) sweep(now time.Time) {
	for pid, d := range h.delays {
		if now.IsZero() || now.Sub(d.readAt) >= delayIdle {
			d.rd.Close()
			delete(h.delays, pid)
		}
	}
}

// loadReading is the host's CPU, this server's and the engine's at one
// instant, in nanoseconds.
type loadReading struct {
	host         engine.HostCPU
	self, engine uint64
}

func (h *hostLoad) read() (loadReading, bool) {
	hc, err := h.proc.HostCPU()
	if err != nil {
		return loadReading{}, false
	}
	self, _ := h.proc.ProcessCPU(h.self)
	for pid, p := range h.engine {
		if !p.due(hc.At) {
			continue
		}
		ns, ok := h.proc.ProcessCPU(pid)
		switch {
		case !ok:
			delete(h.engine, pid) // gone
			continue
		case p.ns != noReading && ns >= p.ns:
			h.engineNs += ns - p.ns
			p.moved = ns != p.ns
		default:
			p.moved = true
		}
		p.ns, p.readAt = ns, hc.At
	}
	return loadReading{host: hc, self: self, engine: h.engineNs}, true
}

// close closes the /proc files it holds.
func (h *hostLoad) close() {
	h.sweep(time.Time{})
	h.proc.Close()
}

// sample reads the host and gives its load since the last reading,
// the run's lanes having used lanesNs of CPU time since then; t is the
// run's time. ok is false for the first reading.
func (h *hostLoad) sample(t float64, lanesNs uint64) (HostSample, bool) {
	cur, ok := h.read()
	if !ok {
		return HostSample{}, false
	}
	prev, had := h.prev, h.has
	h.prev, h.has = cur, true
	if !had {
		return HostSample{}, false
	}
	return between(prev, cur, t, lanesNs), true
}

// between is the host's load from a to b: its busy CPU less the lanes',
// this server's and the engine's, in cores (never below 0), and steal.
func between(a, b loadReading, t float64, lanesNs uint64) HostSample {
	dt := b.host.At.Sub(a.host.At).Seconds()
	s := HostSample{T: t, DT: dt}
	if dt <= 0 {
		return s
	}
	busy := float64(b.host.Busy) - float64(a.host.Busy)
	ours := float64(lanesNs) + float64(b.self) - float64(a.self) + float64(b.engine) - float64(a.engine)
	s.ForeignCores = max(0, busy-ours) / 1e9 / dt
	s.StealCores = max(0, float64(b.host.Steal)-float64(a.host.Steal)) / 1e9 / dt
	return s
}

// quietCheck measures the host's load for a second before a run's lanes
// exist: what is busy then is neither the run nor, but for its own
// bookkeeping, the engine.
func quietCheck(ctx context.Context, enginePids []int) *QuietCheck {
	h := newHostLoad(enginePids, time.Second)
	defer h.close()
	a, ok := h.read()
	if !ok {
		return nil
	}
	t := time.NewTimer(time.Second)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		return nil
	}
	b, ok := h.read()
	if !ok {
		return nil
	}
	s := between(a, b, 0, 0)
	return &QuietCheck{ForeignCores: s.ForeignCores, StealCores: s.StealCores, Busy: s.ForeignCores+s.StealCores >= quietBusy}
}

// HostNoise sums up the host's load over a run, for its view: whether it
// was measured (and why not), the quiet check before it, and the mean and
// the peak of foreign load and steal while it ran.
type HostNoise struct {
	Measured     bool        `json:"measured"`
	Note         string      `json:"note,omitempty"`
	Quiet        *QuietCheck `json:"quiet_check,omitempty"`
	ForeignCores float64     `json:"foreign_cores"`
	StealCores   float64     `json:"steal_cores"`
	PeakForeign  float64     `json:"peak_foreign_cores"`
}

// noiseOf is the summary of a run's host samples.
func noiseOf(samples []HostSample, quiet *QuietCheck, measured bool) HostNoise {
	n := HostNoise{Measured: measured, Quiet: quiet}
	if !measured {
		n.Note = "not measured: the engine's host is not this machine, whose /proc the server reads"
		return n
	}
	n.ForeignCores, n.StealCores = meanLoad(samples, 0, 1e18)
	for _, s := range samples {
		n.PeakForeign = max(n.PeakForeign, s.ForeignCores)
	}
	return n
}

// meanLoad is the mean foreign load and steal, in cores, over [from, to]
// of the run's time: each host sample weighs as much of its interval as
// lies within it.
func meanLoad(samples []HostSample, from, to float64) (foreign, steal float64) {
	var w float64
	for _, s := range samples {
		in := min(s.T, to) - max(s.T-s.DT, from)
		if in <= 0 {
			continue
		}
		foreign, steal, w = foreign+s.ForeignCores*in, steal+s.StealCores*in, w+in
	}
	if w == 0 {
		return 0, 0
	}
	return foreign / w, steal / w
}
