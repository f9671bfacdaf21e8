package workshop

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/runner"
)

// PoolEngine is one engine of a pool as the server is given it: its name,
// its address, its client, and how to make it ready (probe its host, build
// the workload image, reap what an earlier life left there). Prepare is
// called at start-up and again at each probe until it succeeds.
type PoolEngine struct {
	Name    string
	Address string
	Engine  engine.Engine
	// Driver runs the engine's lanes when it is not a Docker Engine (a
	// Kubernetes cluster); Engine is then nil.
	Driver  Driver
	Prepare func(ctx context.Context) (host engine.HostInfo, image string, err error)
}

// Driver is what the pool asks of an engine: a run's lanes (the runner's
// Backend), its host now, removing what a run left, and its events.
type Driver interface {
	runner.Backend
	Probe(ctx context.Context) (engine.HostInfo, error)
	ReapRun(ctx context.Context, runID string, log *slog.Logger) error
	Watch(ctx context.Context, log *slog.Logger, on func(engine.Event))
}

// driver is the engine's Driver: its own, or its Docker Engine's.
func (pe PoolEngine) driver() Driver {
	if pe.Driver != nil {
		return pe.Driver
	}
	return engine.Docker{Engine: pe.Engine}
}

// ProbeEvery is how often the pool's engines are probed, and ProbeTimeout
// how long a probe of an engine made ready may take before it counts as
// not answering.
const (
	ProbeEvery   = 30 * time.Second
	ProbeTimeout = 10 * time.Second
)

// Pool is the manager's engines: each engine's state and its
// transitions, the probes, what the API shows of them, and which engine a
// run may be placed on. Its engines' fields are guarded by its own lock,
// which it takes after the manager's when the queue places a run and
// never holds while it calls the manager; its other fields are set once.
type Pool struct {
	mu      sync.Mutex
	engines []*poolEngine
	opts    Options // the manager's, with their defaults
	log     *slog.Logger
	ctx     context.Context // the manager's: cancelled by Shutdown
	wg      sync.WaitGroup  // the probes and the engines' event watchers
	onEvent func(engine.Event)
	cameUp  func() // an engine came up: the queue may place runs
}

// newPool makes the manager's engines: opts.Pool's, which it probes now
// and every Options.ProbeEvery until ctx ends, or the one engine eng,
// which env runs on and which is ready now. The pool calls onEvent with
// each engine event and cameUp once an engine came up (never while it
// holds its lock).
func newPool(ctx context.Context, eng engine.Engine, env *runner.Env, opts Options, onEvent func(engine.Event), cameUp func()) *Pool {
	p := &Pool{opts: opts, log: opts.Log, ctx: ctx, onEvent: onEvent, cameUp: cameUp}
	if opts.Pool == nil {
		p.engines = []*poolEngine{{PoolEngine: PoolEngine{Name: "default", Address: eng.DaemonHost(), Engine: eng}, capacity: opts.MaxRunning,
			state: EngineReady, env: env, running: map[*entry]bool{}}}
		p.wg.Add(1)
		// The event watcher lives as long as the manager.
		go func() {
			defer p.wg.Done()
			engine.Watch(ctx, eng, p.log, onEvent)
		}()
		return p
	}
	for _, pe := range opts.Pool {
		p.engines = append(p.engines, &poolEngine{PoolEngine: pe, capacity: 1, state: EnginePreparing, running: map[*entry]bool{}})
	}
	p.probeAll(ctx)
	p.wg.Add(1)
	go p.run() // lives until Shutdown
	return p
}

// wait waits for the pool's goroutines, which end with the manager's
// context.
func (p *Pool) wait() { p.wg.Wait() }

// poolEngine is an engine of the manager's: the one engine of a server
// without a pool, or one of a pool's. Its fields after the first are the
// pool's lock's.
type poolEngine struct {
	PoolEngine
	capacity int // runs at once: 1 in a pool, Options.MaxRunning alone

	state    EngineState // changed only by fireLocked
	env      *runner.Env // nil until prepared; its Host is the engine's
	err      string      // why it last failed a probe, "" since it answered
	probedAt time.Time
	running  map[*entry]bool
	watch    sync.Once // starts the engine's event watcher once it is first made ready
	// orphans are the runs interrupted by the engine's going away, whose
	// containers are removed when it answers again.
	orphans []string
}

// fireLocked moves pe to its next state on ev, logging the change; why is
// the error that came with it, if any. p.mu is held.
func (p *Pool) fireLocked(pe *poolEngine, ev engineEvent, why string) {
	next, ok := transition(pe.state, ev)
	if !ok {
		p.log.Error("engine: event out of place", slog.String("engine", pe.Name), slog.String("state", string(pe.state)), slog.String("event", string(ev)))
		return
	}
	if why != "" {
		pe.err = why
	} else if ev == evAnswered || ev == evPrepared {
		pe.err = ""
	}
	if next == pe.state {
		return
	}
	log := p.log.With(slog.String("engine", pe.Name), slog.String("from", string(pe.state)), slog.String("to", string(next)), slog.String("event", string(ev)))
	switch {
	case why != "" && (next == EngineLost || next == EngineUnresponsive):
		log.Warn("engine state", slog.String("why", why))
	case next == EngineChanged || next == EnginePreparing && pe.state != EngineLost:
		log.Warn("engine state")
	default:
		log.Info("engine state")
	}
	pe.state = next
}

// EngineView is an engine of the pool as GET /api/engines shows it. Its
// host is the host's own view, as GET /api/host shows it, once the engine
// was made ready (null before).
type EngineView struct {
	Name    string      `json:"name"`
	Address string      `json:"address"`
	State   EngineState `json:"state"`
	// Up says whether it takes runs now: ready, or busy with room.
	Up       bool             `json:"up"`
	Error    string           `json:"error,omitempty"`
	ProbedAt time.Time        `json:"probed_at,omitzero"`
	Host     *engine.HostView `json:"host"`
	Running  []string         `json:"running"`
}

// Engines is the pool as it is now, in the order it was given.
func (p *Pool) Engines() []EngineView {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]EngineView, 0, len(p.engines))
	for _, pe := range p.engines {
		v := EngineView{Name: pe.Name, Address: pe.Address, State: pe.state, Up: pe.state.takesRuns(), Error: pe.err, ProbedAt: pe.probedAt, Running: []string{}}
		if pe.env != nil {
			h := pe.env.Host.View()
			v.Host = &h
		}
		for e := range pe.running {
			v.Running = append(v.Running, e.run.ID())
		}
		slices.Sort(v.Running)
		out = append(out, v)
	}
	return out
}

// probe asks an engine that is made ready whether it still answers as
// the host it was made ready on, and makes ready one that is to be (at
// start, once its host changed and its run ended, when it answers after it
// went away). Only an engine with no run on it is ever made ready: that
// reaps this server's containers there. A probe that fails or takes longer
// than Options.ProbeTimeout while a run is on the engine leaves the run
// be. It returns whether the engine came up. p.mu is not held.
func (p *Pool) probe(ctx context.Context, pe *poolEngine) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	p.mu.Lock()
	state, env := pe.state, pe.env
	p.mu.Unlock()
	if !state.prepares() {
		ev, why := p.ask(ctx, pe, env.Host)
		p.mu.Lock()
		pe.probedAt = time.Now().UTC()
		p.fireLocked(pe, ev, why)
		state = pe.state // its run may have ended meanwhile
		p.mu.Unlock()
		if !state.prepares() {
			return false
		}
	}
	// No run is on it, and none is placed while it is made ready.
	host, image, err := pe.Prepare(ctx)
	if err == nil {
		err = p.reapOrphans(ctx, pe)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pe.probedAt = time.Now().UTC()
	if err != nil {
		p.fireLocked(pe, evPrepareFailed, err.Error())
		return false
	}
	pe.env = &runner.Env{Engine: pe.Engine, Backend: pe.driver(), Image: image, Instance: p.opts.Instance, Interval: p.opts.Interval, Host: host, DefaultMemory: p.opts.DefaultMemory, Log: p.log.With(slog.String("engine", pe.Name))}
	if p.opts.Store != nil {
		pe.env.Recorder = recorder{p.opts.Store}
	}
	p.fireLocked(pe, evPrepared, "")
	p.log.Info("engine joined the pool", slog.String("engine", pe.Name), slog.String("host", host.Describe()))
	pe.watch.Do(func() {
		p.wg.Add(1)
		// The event watcher lives as long as the manager.
		go func() {
			defer p.wg.Done()
			pe.driver().Watch(p.ctx, p.log, p.onEvent)
		}()
	})
	return true
}

// ask probes an engine's host within Options.ProbeTimeout and says what
// happened: it answered as the host it was made ready on, as another, or
// not in time.
func (p *Pool) ask(ctx context.Context, pe *poolEngine, was engine.HostInfo) (engineEvent, string) {
	timeout := p.opts.ProbeTimeout
	if timeout <= 0 {
		timeout = ProbeTimeout
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	now, err := pe.driver().Probe(pctx)
	if err != nil {
		return evSilent, err.Error()
	}
	if a, b := was.Identity(), now.Identity(); a != b {
		p.log.Warn("engine changed", slog.String("engine", pe.Name), slog.String("was", a), slog.String("is", b))
		return evHostChanged, ""
	}
	return evAnswered, ""
}

// reapOrphans removes the containers of the runs the engine's going away
// interrupted, now that it answers.
func (p *Pool) reapOrphans(ctx context.Context, pe *poolEngine) error {
	p.mu.Lock()
	ids := pe.orphans
	p.mu.Unlock()
	for _, id := range ids {
		if err := pe.driver().ReapRun(ctx, id, p.log); err != nil {
			return err
		}
	}
	p.mu.Lock()
	pe.orphans = pe.orphans[len(ids):]
	p.mu.Unlock()
	return nil
}

// ended tells pe, the engine e ran on, that e has ended: interrupted by
// the engine's going away (in a pool), which takes the engine out until
// it answers, or otherwise, which frees it once no run is left on it.
func (p *Pool) ended(pe *poolEngine, e *entry) {
	if pe == nil {
		return
	}
	v := e.run.View()
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(pe.running, e)
	if p.opts.Pool != nil && v.State == runner.StateInterrupted {
		pe.orphans = append(pe.orphans, v.ID)
		p.fireLocked(pe, evRunLost, v.Error)
		return
	}
	if len(pe.running) == 0 {
		p.fireLocked(pe, evRunsEnded, "")
	}
}

// probeAll probes every engine at once and schedules if one came up.
func (p *Pool) probeAll(ctx context.Context) {
	var wg sync.WaitGroup
	came := make([]bool, len(p.engines))
	for i, pe := range p.engines {
		wg.Add(1)
		go func() { defer wg.Done(); came[i] = p.probe(ctx, pe) }()
	}
	wg.Wait()
	if slices.Contains(came, true) {
		p.cameUp()
	}
}

// run probes the pool every Options.ProbeEvery until the manager shuts
// down.
func (p *Pool) run() {
	defer p.wg.Done()
	every := p.opts.ProbeEvery
	if every <= 0 {
		every = ProbeEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
			p.probeAll(p.ctx)
		}
	}
}
