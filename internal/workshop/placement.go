package workshop

import (
	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
)

// take places e on the engine it is to run on now, and returns it with
// the engine's Env and e's plan there: the first engine in the pool's
// order that is up, has room, holds e within the host quotas beside its
// running runs, can run e's spec (its limits and CPUs) and samples the
// signals its verdict compares. It returns nil if there is none. The
// queue calls it with the manager's lock held, which guards e.
func (p *Pool) take(e *entry) (*poolEngine, *runner.Env, specs.Plan) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pe := range p.engines {
		if !pe.state.takesRuns() || len(pe.running) >= pe.capacity {
			continue
		}
		var inUse ask
		for o := range pe.running {
			inUse = inUse.plus(o.ask)
		}
		if checkLimits("host", e.run.Plan(), e.ask, inUse, p.opts.Quotas.Host) != nil {
			continue
		}
		plan, ok := e.planOn(pe)
		if !ok || !p.judgedOnLocked(e, pe) {
			continue
		}
		pe.running[e] = true
		p.fireLocked(pe, evRunPlaced, "")
		return pe, pe.env, plan
	}
	return nil, nil, specs.Plan{}
}

// hostOf is the host of pe, which a probe may have replaced.
func (p *Pool) hostOf(pe *poolEngine) engine.HostInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	return pe.env.Host
}

// judgedOnLocked says whether e's verdict can be judged on pe's samples:
// they carry every signal it compares. Where no engine of the pool that
// is up carries them, any engine will do, and the run's verdict says why
// it was not judged, as on a single engine. p.mu is held.
func (p *Pool) judgedOnLocked(e *entry, pe *poolEngine) bool {
	spec := models.JudgedBy(e.run.Plan())
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
	for _, o := range p.engines {
		if o.state.takesRuns() && carries(o.env.Host) {
			return false // wait for one that can judge it
		}
	}
	return true
}

// planOn is e's plan as validated on pe's host, and whether it validates
// there: a plan resolves what depends on the host (the device "auto" is
// the disk under that engine's data root), so a run carries out the plan
// of the engine it is placed on. Without a pool there is one engine, which
// the plan was validated for. The manager's lock (e's) and the pool's
// (pe's) are held.
func (e *entry) planOn(pe *poolEngine) (specs.Plan, bool) {
	if e.fits == nil {
		return e.run.Plan(), true
	}
	f, seen := e.fits[pe.Name]
	if !seen {
		plan, errs := experiments.Validate(e.spec, pe.env.Experiments())
		f = fit{plan: models.RoundPlan(plan, e.round), ok: len(errs) == 0}
		e.fits[pe.Name] = f
	}
	return f.plan, f.ok
}

// fit is whether a spec validates on one engine, and its plan there.
type fit struct {
	plan specs.Plan
	ok   bool
}

// Validate checks a spec against the engines: it is valid where some
// engine made ready can run it; otherwise its errors are the first such
// engine's. Without a pool it is the one engine's validation. The plan it
// returns is for the quotas and the page until the run is placed; the run
// carries out the plan of the engine it is placed on.
func (p *Pool) Validate(spec specs.Spec) (specs.Plan, specs.Errors) {
	hosts := p.readyHosts()
	if len(hosts) == 0 {
		return experiments.Validate(spec, runner.Experiments(p.opts.Host, p.opts.DefaultMemory))
	}
	var first specs.Errors
	for i, h := range hosts {
		plan, errs := experiments.Validate(spec, runner.Experiments(h, p.opts.DefaultMemory))
		if len(errs) == 0 {
			return plan, nil
		}
		if i == 0 {
			first = errs
		}
	}
	return specs.Plan{}, first
}

// readyHosts are the hosts of the engines that are made ready, in the
// pool's order.
func (p *Pool) readyHosts() []engine.HostInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	var hosts []engine.HostInfo
	for _, pe := range p.engines {
		if pe.env != nil && !pe.state.prepares() {
			hosts = append(hosts, pe.env.Host)
		}
	}
	return hosts
}

// Host is what the pool knows of the engine's host; in a pool, the first
// engine's that is made ready (Options.Host while none is).
func (p *Pool) Host() engine.HostInfo {
	if hosts := p.readyHosts(); len(hosts) > 0 {
		return hosts[0]
	}
	return p.opts.Host
}
