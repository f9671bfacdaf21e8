package workshop

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/limitlab/limitlab/internal/experiments/finder"
	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workload/wire"
)

// MaxSearches is how many searches the finder keeps in memory, running or
// ended; their probes are runs, kept in the store like any.
const MaxSearches = 200

// DefaultSearchDeadline bounds a whole search (each turn of one in turn
// has its own): a search of the widest grid takes MaxProbes probes of a
// minute at most, and waits its turns in the queue.
const DefaultSearchDeadline = time.Hour

// DefaultQuotaRetry is how often a probe that a quota refused is submitted
// again: the participant's own run, or the queue, is in its way.
const DefaultQuotaRetry = 2 * time.Second

// Finder runs limit searches: each probe is a run of its own, submitted
// to the fair queue as the participant's, and the next limit is chosen
// from the probes that ended.
type Finder struct {
	m   *Manager
	log *slog.Logger
	wg  sync.WaitGroup

	mu       sync.Mutex
	searches map[string]*Search
	order    []*Search
}

func newFinder(m *Manager) *Finder {
	return &Finder{m: m, log: m.log, searches: map[string]*Search{}}
}

// Start checks a search and starts it; its first probe is checked
// against the engine before anything runs, so that a spec the engine
// cannot run is refused at once with its fields named (specs.Errors).
// A participant runs one search at a time: a second is refused with a
// *QuotaError.
func (f *Finder) Start(spec finder.FindSpec, participant, address string) (*Search, error) {
	return f.start(spec, participant, address, "")
}

// start starts a search; after is the search whose second turn it is,
// which may start while that one is still running.
func (f *Finder) start(spec finder.FindSpec, participant, address, after string) (*Search, error) {
	b, errs := spec.Check()
	if errs != nil {
		return nil, errs
	}
	if _, errs := f.m.pool.Validate(spec.ProbeSpec(b.Max)); errs != nil {
		return nil, errs
	}
	deadline := cmp.Or(f.m.opts.SearchDeadline, DefaultSearchDeadline)
	ctx, cancel := context.WithTimeout(f.m.ctx, deadline)
	s := &Search{id: newID(), participant: participant, address: address, spec: spec, created: time.Now(), stop: cancel,
		b: b, state: SearchRunning, after: after, deadline: deadline}
	f.mu.Lock()
	if other := f.runningLocked(participant, after); other != "" {
		f.mu.Unlock()
		cancel()
		return nil, &QuotaError{Scope: "participant", Limit: "searches", Lane: -1, InUse: 1, Max: 1, Over: 1,
			Text: fmt.Sprintf("you have a search running already (%s): one search at a time; stop it or wait for its answer", other)}
	}
	f.searches[s.id] = s
	f.order = append(f.order, s)
	f.forgetLocked()
	f.mu.Unlock()
	f.wg.Add(1)
	// Lives until the search ends, is stopped, or the server shuts down.
	go func() {
		defer f.wg.Done()
		defer cancel()
		f.run(ctx, s)
		f.mu.Lock()
		f.forgetLocked()
		f.mu.Unlock()
	}()
	return s, nil
}

// forgetLocked drops the oldest searches, while they have ended and more
// than MaxSearches are kept. It runs when a search starts and when one
// ends, since a search stopped just before another starts may not have
// ended yet. The oldest still running keeps those after it.
func (f *Finder) forgetLocked() {
	n := 0
	for len(f.order)-n > MaxSearches && f.order[n].isEnded() {
		delete(f.searches, f.order[n].id)
		n++
	}
	f.order = slices.Delete(f.order, 0, n)
}

// runningLocked is the id of a search of the participant's that is still
// running, but for except (a search whose second turn is starting).
func (f *Finder) runningLocked(participant, except string) string {
	for _, o := range f.order {
		if o.participant != participant || o.id == except {
			continue
		}
		o.mu.Lock()
		running := o.state == SearchRunning
		o.mu.Unlock()
		if running {
			return o.id
		}
	}
	return ""
}

// run probes limit after limit until the bisection has its answer.
func (f *Finder) run(ctx context.Context, s *Search) {
	for {
		s.mu.Lock()
		step, done := s.b.Next()
		n := len(s.probes)
		s.mu.Unlock()
		if done {
			// The second turn, if any, starts before this one says it is
			// done: its page links it from then on.
			s.end(searchAnswered, f.turn(s))
			return
		}
		if n >= finder.MaxProbes {
			s.end(searchFailed, fmt.Sprintf("no answer within %d probes", finder.MaxProbes))
			return
		}
		if err := f.probe(ctx, s, step); err != nil {
			switch {
			case errors.Is(ctx.Err(), context.DeadlineExceeded):
				s.end(searchPastDeadline, fmt.Sprintf("the search ran past its deadline of %s; its probe under way was stopped", s.deadline))
			case ctx.Err() != nil:
				s.end(searchStopped, err.Error())
			default:
				s.end(searchFailed, err.Error())
			}
			return
		}
	}
}

// probe runs the search's service under step's limit, once, to its end.
func (f *Finder) probe(ctx context.Context, s *Search, step int) error {
	limit := s.b.Limit(step)
	spec := s.spec.ProbeSpec(limit)
	plan, errs := f.m.pool.Validate(spec)
	if errs != nil {
		return fmt.Errorf("the probe at %s %s: %v", s.spec.Search.Limit, finder.LimitText(s.spec.Search.Limit, limit), errs)
	}
	var run *runner.Run
	for {
		r, err := f.m.SubmitFrom(spec, plan, s.participant, s.address)
		var quota *QuotaError
		switch {
		case err == nil:
			run = r
		case errors.As(err, &quota):
			// The participant's own runs, or a full queue: wait a turn.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(cmp.Or(f.m.opts.QuotaRetry, DefaultQuotaRetry)):
				continue
			}
		default:
			return err
		}
		break
	}
	s.mu.Lock()
	s.probes = append(s.probes, probeRecord{step: step, limit: limit, run: run.ID()})
	k := len(s.probes) - 1
	s.current = run.ID()
	s.mu.Unlock()
	select {
	case <-run.Done():
	case <-ctx.Done():
		_ = f.m.Stop(run.ID())
		<-run.Done()
		return ctx.Err()
	}
	v := run.View()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current = ""
	s.probes[k].ended = v.State
	var r finder.ProbeRun
	switch why := serviceDied(v); {
	case why != "":
		// The limit misses the target: the service did not serve.
		r = finder.ProbeRun{Run: v.ID, ErrorsPct: 100, Died: why}
	case v.State != runner.StateDone:
		return fmt.Errorf("the probe run %s at %s %s ended %s: %s", v.ID, s.spec.Search.Limit, finder.LimitText(s.spec.Search.Limit, limit), v.State, v.Error)
	default:
		var err error
		if r, err = probeResult(v, f.m.pool.Host().NCPU); err != nil {
			return err
		}
	}
	meets := s.spec.Target.Meets(r)
	s.probes[k].result, s.probes[k].meets = &r, &meets
	s.b.Record(step, r)
	return nil
}

// probeLanes are a probe run's service and load lanes, found by name.
func probeLanes(v runner.RunView) (svc, load *runner.LaneResult) {
	for i := range v.Lanes {
		switch v.Lanes[i].Name {
		case finder.ProbeService:
			svc = &v.Lanes[i]
		case finder.ProbeLoad:
			load = &v.Lanes[i]
		}
	}
	return svc, load
}

// serviceDied says why a probe's service did not serve its load, if it
// did not: the kernel OOM killed it, it exited on its own before its load
// ended, or it never answered.
func serviceDied(v runner.RunView) string {
	svc, load := probeLanes(v)
	if svc == nil || load == nil {
		return ""
	}
	switch {
	case svc.OOMKilled:
		return "the kernel OOM killed the service"
	case load.ExitCode != nil && *load.ExitCode != 0 && svc.ExitCode != nil && *svc.ExitCode != 0 && svc.EndedAt <= load.EndedAt && !svc.TimedOut:
		return fmt.Sprintf("the service exited (%d) before its load ended", *svc.ExitCode)
	case load.Failure == wire.FailureUnanswered:
		return "the service never answered"
	}
	return ""
}

// probeResult reads what a probe run measured: the load's p99 and failed
// share, and the service's share of its CPUs' time throttled while the
// load ran.
func probeResult(v runner.RunView, ncpu int) (finder.ProbeRun, error) {
	r := finder.ProbeRun{Run: v.ID}
	svc, load := probeLanes(v)
	if svc == nil || load == nil || load.LatencyMs == nil || load.Requests == 0 {
		return r, fmt.Errorf("the probe run %s measured no latency", v.ID)
	}
	r.P99Ms = load.LatencyMs.P99
	r.ErrorsPct = 100 * float64(load.Failures) / float64(load.Requests)
	threads := models.GoThreads(svc.Workload, svc.CPULimit, ncpu)
	if svc.Workload.Kind == specs.KindImage {
		// A facilitator's service may run a thread on every CPU.
		threads = ncpu
	}
	if threads > 0 && load.WallSeconds > 0 {
		r.Throttled = svc.ThrottledSeconds / (float64(threads) * load.WallSeconds)
	}
	return r, nil
}

// turn starts a search's second turn, the other limit with the limit this
// one recommends fixed, if it has one and found its answer; it says why
// the turn could not start.
func (f *Finder) turn(s *Search) string {
	s.mu.Lock()
	a := s.b.Answer()
	s.mu.Unlock()
	if !a.Found {
		return ""
	}
	s.mu.Lock()
	rec := s.spec.Recommend(s.b, a)
	s.mu.Unlock()
	next, ok := s.spec.Following(rec.Limit)
	if !ok {
		return ""
	}
	child, errs := f.start(next, s.participant, s.address, s.id)
	if errs != nil {
		return fmt.Sprintf("the search of --%s with --%s %s could not start: %v", next.Search.Limit, s.spec.Search.Limit, rec.Limit, errs)
	}
	s.mu.Lock()
	s.then = child.id
	s.mu.Unlock()
	return ""
}

// Stop stops a search and its probe under way.
func (f *Finder) Stop(id string) error {
	f.mu.Lock()
	s, ok := f.searches[id]
	f.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w %q", ErrNoRun, id)
	}
	s.stop()
	return nil
}

// Owner is a running search's participant.
func (f *Finder) Owner(id string) (string, bool) {
	f.mu.Lock()
	s, ok := f.searches[id]
	f.mu.Unlock()
	if !ok {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.participant, s.state == SearchRunning
}

// View is a search as it stands.
func (f *Finder) View(id string) (SearchView, bool) {
	f.mu.Lock()
	s, ok := f.searches[id]
	f.mu.Unlock()
	if !ok {
		return SearchView{}, false
	}
	return s.view(func(run string) (runner.State, bool) {
		v, ok := f.m.Archive().View(run)
		return v.State, ok
	}), true
}

// wait waits for every search's goroutine: Shutdown's.
func (f *Finder) wait() { f.wg.Wait() }
