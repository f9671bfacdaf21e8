package workshop

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments"
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
	Prepare func(ctx context.Context) (host engine.HostInfo, image string, err error)
}

// ProbeEvery is how often the pool's engines are probed.
const ProbeEvery = 30 * time.Second

// poolEngine is an engine of the manager's: the one engine of a server
// without a pool, or one of a pool's. Its fields after the first are m.mu's.
type poolEngine struct {
	PoolEngine
	capacity int // runs at once: 1 in a pool, Options.MaxRunning alone

	env      *runner.Env // nil until prepared; its Host is the engine's
	up       bool
	err      string
	probedAt time.Time
	running  map[*entry]bool
	watching bool
	// changed is set while the engine's host is no longer the one it was
	// made ready on: it takes no other run until it is made ready again.
	changed bool
	// orphans are the runs interrupted by the engine's going away, whose
	// containers are removed when it answers again.
	orphans []string
}

// EngineView is an engine of the pool as GET /api/engines shows it.
type EngineView struct {
	Name     string    `json:"name"`
	Address  string    `json:"address"`
	Up       bool      `json:"up"`
	Error    string    `json:"error,omitempty"`
	ProbedAt time.Time `json:"probed_at,omitzero"`
	Host     string    `json:"host,omitempty"` // "Docker 20.10.24, cgroup v1, 2 CPUs"
	Cgroup   string    `json:"cgroup,omitempty"`
	CPUs     int       `json:"cpus,omitempty"`
	MemTotal int64     `json:"mem_total,omitempty"`
	Stats    string    `json:"stats,omitempty"`
	// Unsupported are the limits the engine cannot apply, with why.
	Unsupported map[string]string `json:"unsupported,omitempty"`
	Running     []string          `json:"running"`
}

// Engines is the pool as it is now, in the order it was given.
func (m *Manager) Engines() []EngineView {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]EngineView, 0, len(m.pool))
	for _, pe := range m.pool {
		v := EngineView{Name: pe.Name, Address: pe.Address, Up: pe.up, Error: pe.err, ProbedAt: pe.probedAt, Running: []string{}}
		if pe.env != nil {
			h := pe.env.Host
			v.Host, v.Cgroup, v.CPUs, v.MemTotal, v.Stats = h.Describe(), h.CgroupVersion, h.NCPU, h.MemTotal, h.StatsSource
			for name, s := range h.Limits {
				if !s.Supported {
					if v.Unsupported == nil {
						v.Unsupported = map[string]string{}
					}
					v.Unsupported[name] = s.Reason
				}
			}
		}
		for e := range pe.running {
			v.Running = append(v.Running, e.run.ID())
		}
		slices.Sort(v.Running)
		out = append(out, v)
	}
	return out
}

// probe makes an engine ready if it is not, and checks that it answers
// as the host it was made ready on. An engine is made ready anew when it
// answers after it left the pool, and when its host is no longer the one
// it was (another version, kernel, cgroup version, CPUs or memory) once no
// run is on it: it may have come back as another engine, and what runs
// may ask of it was probed on the old one. It returns whether the engine
// came up or was made ready again. m.mu is not held.
func (m *Manager) probe(ctx context.Context, pe *poolEngine) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	m.mu.Lock()
	env, ready := pe.env, pe.env != nil && pe.up
	m.mu.Unlock()
	var err error
	if ready {
		pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
		var now engine.HostInfo
		now, err = engine.ProbeHost(pctx, pe.Engine, "")
		pcancel()
		if was, is := env.Host.Identity(), now.Identity(); err == nil && was != is {
			// Held from now on, so that no run is placed on it while it
			// is made ready again (which reaps this server's containers
			// there); whether a run is on it is read under the same lock.
			m.mu.Lock()
			busy := len(pe.running) > 0
			if !pe.changed {
				m.log.Warn("engine changed", slog.String("engine", pe.Name), slog.String("was", was), slog.String("is", is), slog.Bool("busy", busy))
			}
			pe.changed = true
			m.mu.Unlock()
			ready = busy // made ready again once its run ends
		}
	}
	var host engine.HostInfo
	var image string
	if err == nil && !ready {
		host, image, err = pe.Prepare(ctx)
	}
	if err == nil {
		err = m.reapOrphans(ctx, pe)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	pe.probedAt = time.Now().UTC()
	if err != nil {
		if pe.up {
			m.log.Warn("engine left the pool", slog.String("engine", pe.Name), slog.Any("err", err))
		}
		pe.up, pe.err = false, err.Error()
		return false
	}
	if !ready {
		pe.env = &runner.Env{Engine: pe.Engine, Image: image, Instance: m.opts.Instance, Interval: m.opts.Interval, Host: host, Log: m.log.With(slog.String("engine", pe.Name))}
		if m.opts.Store != nil {
			pe.env.Recorder = recorder{m.opts.Store}
		}
		pe.changed = false
		m.log.Info("engine joined the pool", slog.String("engine", pe.Name), slog.String("host", host.Describe()))
	}
	came := !pe.up || !ready
	pe.up, pe.err = true, ""
	if !pe.watching {
		pe.watching = true
		m.wg.Add(1)
		// The event watcher lives as long as the manager.
		go func() {
			defer m.wg.Done()
			engine.Watch(m.ctx, pe.Engine, m.log, m.onEvent)
		}()
	}
	return came
}

// reapOrphans removes the containers of the runs the engine's going away
// interrupted, now that it answers.
func (m *Manager) reapOrphans(ctx context.Context, pe *poolEngine) error {
	m.mu.Lock()
	ids := pe.orphans
	m.mu.Unlock()
	for _, id := range ids {
		if _, err := engine.Reap(ctx, pe.Engine, id, m.log); err != nil {
			return err
		}
	}
	m.mu.Lock()
	pe.orphans = pe.orphans[len(ids):]
	m.mu.Unlock()
	return nil
}

// lostLocked takes an engine out of the pool when a run on it ended
// interrupted by its going away; the probe brings it back once it
// answers. m.mu is held.
func (m *Manager) lostLocked(e *entry) {
	pe := e.engine
	v := e.run.View()
	if m.opts.Pool == nil || pe == nil || v.State != runner.StateInterrupted {
		return
	}
	pe.orphans = append(pe.orphans, v.ID)
	if pe.up {
		m.log.Warn("engine left the pool", slog.String("engine", pe.Name), slog.String("run", v.ID), slog.String("why", v.Error))
	}
	pe.up, pe.err = false, v.Error
}

// probeAll probes every engine at once and schedules if one came up.
func (m *Manager) probeAll(ctx context.Context) {
	var wg sync.WaitGroup
	came := make([]bool, len(m.pool))
	for i, pe := range m.pool {
		wg.Add(1)
		go func() { defer wg.Done(); came[i] = m.probe(ctx, pe) }()
	}
	wg.Wait()
	if slices.Contains(came, true) {
		m.schedule()
	}
}

// prober probes the pool every Options.ProbeEvery until the manager shuts down.
func (m *Manager) prober() {
	defer m.wg.Done()
	every := m.opts.ProbeEvery
	if every <= 0 {
		every = ProbeEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
			m.probeAll(m.ctx)
		}
	}
}

// engineForLocked is the engine e is to run on now: the first in the
// pool's order that is up, has room, holds e within the host quotas beside
// its running runs, can run e's spec (its limits and CPUs) and samples the
// signals its verdict compares; nil if none. m.mu is held.
func (m *Manager) engineForLocked(e *entry) *poolEngine {
	for _, pe := range m.pool {
		if !pe.up || pe.env == nil || pe.changed || len(pe.running) >= pe.capacity {
			continue
		}
		var inUse ask
		for o := range pe.running {
			inUse = inUse.plus(o.ask)
		}
		if checkLimits("host", e.run.Plan(), e.ask, inUse, m.opts.Quotas.Host) != nil {
			continue
		}
		if !e.canRunOn(pe) || !m.judgedOnLocked(e, pe) {
			continue
		}
		return pe
	}
	return nil
}

// judgedOnLocked says whether e's verdict can be judged on pe's samples:
// they carry every signal it compares. Where no engine of the pool that
// is up carries them, any engine will do, and the run's verdict says why
// it was not judged, as on a single engine. m.mu is held.
func (m *Manager) judgedOnLocked(e *entry, pe *poolEngine) bool {
	spec := e.run.Plan().JudgedBy()
	if spec == nil || len(spec.Needs()) == 0 {
		return true
	}
	carries := func(h engine.HostInfo) bool {
		_, _, lacks := h.Samples.LacksAny(spec.Needs())
		return !lacks
	}
	if carries(pe.env.Host) {
		return true
	}
	for _, o := range m.pool {
		if o.up && o.env != nil && carries(o.env.Host) {
			return false // wait for one that can judge it
		}
	}
	return true
}

// canRunOn says whether the engine can run e's spec: it validates there.
// Without a pool there is one engine, which the spec was validated for.
func (e *entry) canRunOn(pe *poolEngine) bool {
	if e.fits == nil {
		return true
	}
	ok, seen := e.fits[pe.Name]
	if !seen {
		_, errs := experiments.Validate(e.run.Spec(), pe.env.Host.Experiments())
		ok = len(errs) == 0
		e.fits[pe.Name] = ok
	}
	return ok
}

// Validate checks a spec against the engines: it is valid where some
// engine that is up can run it; otherwise its errors are the first such
// engine's. Without a pool it is the one engine's validation.
func (m *Manager) Validate(spec experiments.Spec) (experiments.Plan, experiments.Errors) {
	m.mu.Lock()
	var hosts []engine.HostInfo
	for _, pe := range m.pool {
		if pe.up && pe.env != nil {
			hosts = append(hosts, pe.env.Host)
		}
	}
	m.mu.Unlock()
	if len(hosts) == 0 {
		return experiments.Validate(spec, m.opts.Host.Experiments())
	}
	var first experiments.Errors
	for i, h := range hosts {
		plan, errs := experiments.Validate(spec, h.Experiments())
		if len(errs) == 0 {
			return plan, nil
		}
		if i == 0 {
			first = errs
		}
	}
	return experiments.Plan{}, first
}
