// Package runner is one run's life on the engine: it creates the lanes'
// containers, starts them in the plan's order and phases, follows each to
// its exit, samples their counters, judges the result against the model,
// and removes every container before the run reaches its final state. It
// keeps the run's state private and builds views of it when asked. It knows
// nothing of queues, participants, the store or HTML.
package runner

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/hub"
)

// Recorder keeps what a run publishes beyond the server's life: every
// message in the order its viewers got them, and the run's row.
type Recorder interface {
	Record(runID string, msg []byte)
	Save(v RunView, participant string)
}

// Env is what every run of a server shares: the engine, the workload
// image, the host, the sampling interval and where runs are recorded.
type Env struct {
	// Engine is a Docker Engine; Backend, if set, runs the lanes instead
	// (a Kubernetes cluster), and Engine may be nil.
	Engine   engine.Engine
	Backend  Backend
	Image    string
	Instance string        // the server's id, on every container it makes
	Interval time.Duration // sampling interval; DefaultInterval if zero
	Host     engine.HostInfo
	// DefaultMemory is the server's memory limit for a lane that sets
	// none (none if zero): the server's setting, the same on every
	// engine.
	DefaultMemory int64
	Log           *slog.Logger
	Recorder      Recorder // nil: runs are kept in memory only

	// startLatency is how long the engine took to start the last
	// container, to start phased lanes on time.
	startLatency atomic.Int64

	clockOnce sync.Once
	clock     *ticker // the one sampling clock of every run
}

// Experiments is what validation needs of the engine's host, with the
// server's default memory.
func (e *Env) Experiments() specs.Host { return Experiments(e.Host, e.DefaultMemory) }

// Experiments is what validation needs of host, on a server whose lanes
// that set no memory limit get defaultMemory.
func Experiments(host engine.HostInfo, defaultMemory int64) specs.Host {
	h := host.Experiments()
	h.DefaultMemory = defaultMemory
	return h
}

// ticks is the sampling clock all the runs share.
func (e *Env) ticks() *ticker {
	e.clockOnce.Do(func() { e.clock = newTicker() })
	return e.clock
}

// DefaultInterval is the sampling interval unless one is set.
const DefaultInterval = 250 * time.Millisecond

// MinInterval and MaxInterval bound the sampling interval, a multiple of
// IntervalStep.
const (
	MinInterval  = specs.MinInterval
	MaxInterval  = specs.MaxInterval
	IntervalStep = specs.IntervalStep
)

func (e *Env) interval() time.Duration {
	if e.Interval == 0 {
		return DefaultInterval
	}
	return e.Interval
}

func (e *Env) log() *slog.Logger {
	if e.Log == nil {
		return slog.Default()
	}
	return e.Log
}

// latency is the engine's last start latency, or what Docker 20.10 takes
// on a small host until one is measured.
func (e *Env) latency() time.Duration {
	if d := e.startLatency.Load(); d > 0 {
		return time.Duration(d)
	}
	return 500 * time.Millisecond
}

// Run is one experiment on the engine.
type Run struct {
	env         *Env
	id          string
	participant string
	spec        specs.Spec
	plan        specs.Plan
	host        string // the host in a few words, as the run records it
	engine      string // the pool's engine it runs on, once assigned
	statsNote   string
	interval    time.Duration
	bounds      []float64 // the plan's phase bounds
	series      *Series   // set before the run is shared; nil for a run alone
	hub         *hub.Hub
	pub         *publisher
	done        chan struct{}

	mu     sync.Mutex
	st     runState
	cancel context.CancelFunc // set while it executes
}

// New makes a queued run of a validated plan.
func New(env *Env, id, participant string, spec specs.Spec, plan specs.Plan) *Run {
	r := &Run{env: env, id: id, participant: participant, spec: spec, plan: plan, host: env.Host.Describe(),
		interval: env.interval(), bounds: plan.PhaseBounds(), hub: hub.New(0), done: make(chan struct{})}
	r.pub = &publisher{id: id, hub: r.hub, recorder: env.Recorder}
	if plan.Interval > 0 {
		r.interval = plan.Interval
	}
	if !env.Host.ReadsCgroups() {
		r.statsNote = env.Host.StatsNote
	}
	r.st = runState{state: StateQueued, createdAt: time.Now().UTC()}
	for range plan.Lanes {
		r.st.lanes = append(r.st.lanes, &laneState{state: LanePending})
	}
	r.st.guide = newGuide(plan)
	return r
}

// Assign gives a queued run the engine it is to run on, one of a pool's,
// and the plan validated on that engine's host (what depends on the host,
// such as the device "auto", is that engine's): it records that engine's
// host and runs there when executed. It is called before Execute, and the
// plan has the lanes the run was made with.
func (r *Run) Assign(env *Env, name string, plan specs.Plan) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.env, r.engine, r.host, r.statsNote, r.plan = env, name, env.Host.Describe(), "", plan
	if !env.Host.ReadsCgroups() {
		r.statsNote = env.Host.StatsNote
	}
}

// Series places a run among the repeats of one spec: the series' id (its
// first run's), the run's index from 0, and every run's id in order.
type Series struct {
	ID    string   `json:"id"`
	Index int      `json:"index"`
	Runs  []string `json:"runs"`
}

// InSeries makes the run one of a series; it is called before the run is
// announced or shared.
func (r *Run) InSeries(s Series) { r.series = &s }

// ID is the run's id.
func (r *Run) ID() string { return r.id }

// Participant is who submitted the run.
func (r *Run) Participant() string { return r.participant }

// Plan is the validated plan the run carries out.
func (r *Run) Plan() specs.Plan {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.plan
}

// Hub is the run's live fan-out.
func (r *Run) Hub() *hub.Hub { return r.hub }

// Done is closed when the run has ended and its containers are gone.
func (r *Run) Done() <-chan struct{} { return r.done }

// View is a snapshot of the run.
func (r *Run) View() RunView {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.viewLocked()
}

// Ended says whether the run is over.
func (r *Run) Ended() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st.state.Ended()
}

// publishView sends the run's current view to its viewers.
func (r *Run) publishView() {
	r.mu.Lock()
	v := r.viewLocked()
	r.mu.Unlock()
	r.pub.publish(Message{Type: KindRun, Run: &v})
}

// Announce records the run's row and publishes its view: a run just made,
// before it is queued, and a run as it begins.
func (r *Run) Announce() {
	r.pub.save(r.View(), r.participant)
	r.publishView()
}

// update changes the run's state under its lock, then publishes the view.
func (r *Run) update(f func(s *runState)) {
	r.mu.Lock()
	f(&r.st)
	r.mu.Unlock()
	r.publishView()
}

func (x *execution) setLane(i int, f func(l *laneState)) {
	x.r.update(func(s *runState) { f(s.lanes[i]) })
}

// SetQueuePosition tells a queued run its place (1 starts next) and
// publishes it if it moved.
func (r *Run) SetQueuePosition(n int) {
	r.mu.Lock()
	moved := r.st.queuePos != n
	r.st.queuePos = n
	r.mu.Unlock()
	if moved {
		r.publishView()
	}
}

// EndQueued ends a run that never started, in state s, saying why.
func (r *Run) EndQueued(s State, why string) {
	r.update(func(st *runState) {
		st.state, st.err, st.queuePos = s, why, 0
		st.endedAt = time.Now()
		for _, l := range st.lanes {
			l.move(LaneSkipped)
		}
	})
	r.pub.save(r.View(), r.participant)
	r.hub.Close()
	close(r.done)
}

// Stop asks a running run to stop: its containers are killed and it ends
// as "stopped", with what was measured so far kept. A run that has not
// begun executing stops as soon as it does.
func (r *Run) Stop() {
	r.mu.Lock()
	if !r.st.state.Ended() {
		r.st.stopped = true
	}
	cancel := r.cancel
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// AddEvent marks an engine event on its lane, once per lane and kind (a
// reconcile may see what the stream saw).
func (r *Run) AddEvent(ev engine.Event) {
	r.mu.Lock()
	if ev.Lane < 0 || ev.Lane >= len(r.st.lanes) || r.st.start.IsZero() {
		r.mu.Unlock()
		return
	}
	for _, e := range r.st.events {
		if e.Lane == ev.Lane && e.Kind == ev.Kind {
			r.mu.Unlock()
			return
		}
	}
	r.st.events = append(r.st.events, EventRecord{Lane: ev.Lane, Kind: ev.Kind, ExitCode: ev.ExitCode,
		AtSeconds: ev.At.Sub(r.st.start).Seconds()})
	if ev.Kind == engine.EventOOM {
		r.st.lanes[ev.Lane].oomKilled = true
	}
	r.mu.Unlock()
	r.publishView()
}

// publisher sends a run's messages to its live viewers and to its
// recorder, in one order for both, and saves its row.
type publisher struct {
	id       string
	hub      *hub.Hub
	recorder Recorder // nil: kept in memory only
	mu       sync.Mutex
}

func (p *publisher) publish(m Message) {
	b, err := json.Marshal(m)
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hub.Publish(b)
	if p.recorder != nil {
		p.recorder.Record(p.id, b)
	}
}

func (p *publisher) save(v RunView, participant string) {
	if p.recorder != nil {
		p.recorder.Save(v, participant)
	}
}
