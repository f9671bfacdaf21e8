package workshop_test

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine/enginefake"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/experiments/finder"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/workshop"
)

const searchSpec = `{"name": "right-size", "service": {"kind": "http", "work_us": 4000, "gomaxprocs": "1"}, "load": {"rate": 150, "seconds": 8},
  "target": {"p99_ms": 50}, "search": {"limit": "cpus", "min": "0.1", "max": "2", "resolution": "0.05"}}`

func waitSearch(t *testing.T, f *workshop.Finder, id string) workshop.SearchView {
	t.Helper()
	var v workshop.SearchView
	enginetest.WaitFor(t, time.Minute, "the search to end", func() bool {
		v, _ = f.View(id)
		return v.State != workshop.SearchRunning
	})
	return v
}

// TestFakeSearchBisects: each probe is a run of the manager's, in the
// queue, and the search ends at the smallest limit on its grid that met
// the target, in fewer runs than a sweep of the grid.
func TestFakeSearchBisects(t *testing.T) {
	fake := enginefake.New()
	fake.Runtime = 20 * time.Millisecond
	fake.Summarize = enginefake.ServiceNeeding(0.6)
	m := fakeManager(t, fake, workshop.Options{Quotas: &workshop.Quotas{Participant: workshop.Limits{Runs: 1}}})
	fs, errs := experiments.ParseFind([]byte(searchSpec))
	if errs != nil {
		t.Fatal(errs)
	}
	s, err := m.Finder().Start(fs, "ada", "")
	if err != nil {
		t.Fatal(err)
	}
	v := waitSearch(t, m.Finder(), s.ID())
	if v.State != workshop.SearchDone || v.Answer == nil || !v.Answer.Found || math.Abs(v.Answer.Limit-0.65) > 1e-9 {
		t.Fatalf("search ended %s (%s) with %+v, want 0.65", v.State, v.Error, v.Answer)
	}
	t.Logf("answer %v after %d probe runs; a sweep of the grid: %d", v.Answer.Limit, len(v.Probes), v.GridRuns)
	if len(v.Probes) > 10 || v.GridRuns != 39 {
		t.Errorf("%d probes against a grid of %d", len(v.Probes), v.GridRuns)
	}
	for _, p := range v.Probes {
		rv, ok := m.Archive().View(p.Run)
		if !ok || rv.State != "done" || p.Result == nil || p.Meets == nil || !strings.Contains(rv.Name, "cpus "+p.Text) {
			t.Errorf("probe %+v: its run %v %+v", p, ok, rv.State)
		}
	}
	if v.Recommend == nil || v.Recommend.Request != "0.65" || v.Recommend.Limit != "0.85" {
		t.Errorf("recommendation %+v", v.Recommend)
	}
	if math.Abs(v.Needs-0.6) > 1e-9 {
		t.Errorf("the model's floor %.2f, want 0.6", v.Needs)
	}
}

// TestFakeSearchBothInTurn: a search with a second turn searches --cpus,
// then --memory with the --cpus it recommends (its answer and headroom)
// fixed in every probe; each search links the other.
func TestFakeSearchBothInTurn(t *testing.T) {
	fake := enginefake.New()
	fake.Runtime = 20 * time.Millisecond
	fake.Summarize = enginefake.ServiceNeeding(0.6)
	m := fakeManager(t, fake, workshop.Options{})
	spec := strings.Replace(searchSpec, `"resolution": "0.05"}`, `"resolution": "0.05"}, "then": {"limit": "memory", "min": "16m", "max": "128m", "resolution": "16m", "repeats": 1}`, 1)
	fs, errs := experiments.ParseFind([]byte(spec))
	if errs != nil {
		t.Fatal(errs)
	}
	s, err := m.Finder().Start(fs, "ada", "")
	if err != nil {
		t.Fatal(err)
	}
	first := waitSearch(t, m.Finder(), s.ID())
	if first.State != workshop.SearchDone || first.Answer == nil || !first.Answer.Found || first.Then == "" {
		t.Fatalf("the first turn: %s (%s), answer %+v, then %q", first.State, first.Error, first.Answer, first.Then)
	}
	second := waitSearch(t, m.Finder(), first.Then)
	if second.State != workshop.SearchDone || second.After != first.ID || second.Spec.Search.Limit != "memory" ||
		first.Recommend == nil || second.Spec.Fixed.CPUs != specs.Value(first.Recommend.Limit) {
		t.Fatalf("the second turn: %s (%s), after %q, spec %+v", second.State, second.Error, second.After, second.Spec)
	}
	if len(second.Probes) == 0 {
		t.Fatal("the second turn ran no probe")
	}
	for _, p := range second.Probes {
		rv, ok := m.Archive().View(p.Run)
		if !ok || len(rv.Lanes) != 2 {
			t.Fatalf("probe %+v: run %v", p, ok)
		}
		r := rv.Lanes[0].Requested
		if specs.Value(strconv.FormatFloat(float64(r.NanoCPUs)/1e9, 'f', -1, 64)) != second.Spec.Fixed.CPUs || r.Memory != int64(p.Limit)<<20 {
			t.Errorf("the second turn's probe at %s ran the service with %+v, want --cpus %s fixed", p.Text, r, second.Spec.Fixed.CPUs)
		}
	}
	t.Logf("--cpus %v, then --memory %+v", first.Answer.Limit, second.Answer)
}

// TestFakeSearchWaitsItsTurnAndStops: a probe the participant's quota
// refuses waits for the participant's own run; a stopped search stops its
// probe and starts no other.
func TestFakeSearchWaitsItsTurnAndStops(t *testing.T) {
	fake := enginefake.New()
	fake.Runtime = 300 * time.Millisecond
	fake.Summarize = enginefake.ServiceNeeding(0.6)
	m := fakeManager(t, fake, workshop.Options{QuotaRetry: 20 * time.Millisecond, Quotas: &workshop.Quotas{Participant: workshop.Limits{Runs: 1}}})
	own, err := fakeSubmit(t, m, "ada", `{"lanes": [{"workload": {"kind": "spin", "seconds": 1}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	fs, _ := experiments.ParseFind([]byte(searchSpec))
	s, err := m.Finder().Start(fs, "ada", "")
	if err != nil {
		t.Fatal(err)
	}
	enginetest.WaitFor(t, time.Minute, "the first probe to be queued after Ada's own run", func() bool {
		v, _ := m.Finder().View(s.ID())
		return len(v.Probes) == 1
	})
	if !own.Ended() {
		t.Error("a probe was queued beside the participant's own run, past the quota of one run")
	}
	if err := m.Finder().Stop(s.ID()); err != nil {
		t.Fatal(err)
	}
	v := waitSearch(t, m.Finder(), s.ID())
	if v.State != workshop.SearchStopped || len(v.Probes) != 1 {
		t.Errorf("a stopped search: %s with %d probes", v.State, len(v.Probes))
	}
	if rv, _ := m.Archive().View(v.Probes[0].Run); !rv.Ended {
		t.Errorf("the stopped search's probe is %s", rv.State)
	}
}

// A search the engine cannot run is refused before anything runs, its
// field named.
func TestFakeSearchRefusesWhatTheEngineCannotRun(t *testing.T) {
	fake := enginefake.New()
	m := fakeManager(t, fake, workshop.Options{})
	fs, _ := experiments.ParseFind([]byte(strings.Replace(searchSpec, `"max": "2"`, `"max": "8"`, 1)))
	if _, errs := m.Finder().Start(fs, "ada", ""); errs == nil || !strings.Contains(errs.Error(), "cpus") {
		t.Errorf("a search up to 8 CPUs on a 2-CPU engine: %v", errs)
	}
	if n := fake.Counts().Creates; n != 0 {
		t.Errorf("%d containers created for a refused search", n)
	}
}

// rightSize runs the right-size lab's search on m to its end, logging
// each probe, and checks what holds of any search: every probe's run
// kept and done, the answer a limit of the grid.
func rightSize(t testing.TB, m *workshop.Manager) workshop.SearchView {
	t.Helper()
	fs, errs := experiments.ParseFind([]byte(`{"lab": "right-size-go"}`))
	if errs != nil {
		t.Fatal(errs)
	}
	s, err := m.Finder().Start(fs, "ada", "")
	if err != nil {
		t.Fatal(err)
	}
	var v workshop.SearchView
	enginetest.WaitFor(t, 15*time.Minute, "the search to end", func() bool {
		v, _ = m.Finder().View(s.ID())
		return v.State != workshop.SearchRunning
	})
	for _, p := range v.Probes {
		r := p.Result
		if r == nil {
			t.Errorf("probe %+v measured nothing", p)
			continue
		}
		t.Logf("probe at --cpus %s: p99 %.1f ms, %.2f%% failed, throttled %.0f%%, meets %v (run %s)", p.Text, r.P99Ms, r.ErrorsPct, 100*r.Throttled, *p.Meets, p.Run)
		if rv, ok := m.Archive().View(p.Run); !ok || rv.State != "done" {
			t.Errorf("probe %s's run is %v %s", p.Text, ok, rv.State)
		}
	}
	if v.State != workshop.SearchDone || v.Answer == nil || !v.Answer.Found {
		t.Fatalf("search %s (%s), answer %+v", v.State, v.Error, v.Answer)
	}
	a := v.Answer
	t.Logf("answer --cpus %s after %d runs at %d limits (a sweep: %d) in %s; %s", finder.LimitText("cpus", a.Limit), a.Probes, a.Steps, v.GridRuns,
		time.Since(v.Created).Round(time.Second), a.BoundSay)
	onGrid := math.Abs(math.Round((a.Limit-v.Min)/v.Step)*v.Step+v.Min-a.Limit) < 1e-9
	if a.Limit < v.Min || a.Limit > v.Max || !onGrid {
		t.Errorf("answer %v is not a limit of the search's grid", a.Limit)
	}
	return v
}

// TestSearchOnTheRealEngine: the right-size lab's search of --cpus on the
// real engine, each probe a run with its service and open-loop load, ends
// within its bounds at a limit on its grid, with every probe's run kept,
// and its verdict holds: at 150 requests a second of 4 ms each the
// service needs 0.6 cores and cannot keep up below, so the answer lies
// above that.
//
// The answer rests on measured latency, which a busy host can spoil: it is
// measured again if it was.
func TestSearchOnTheRealEngine(t *testing.T) {
	enginetest.Measure(t, "the right-size search", func(t testing.TB) {
		v := rightSize(t, enginetest.Manager(t))
		if v.Verdict == nil || !v.Verdict.Pass {
			t.Errorf("verdict %+v", v.Verdict)
		}
	})
}

// TestSearchInTurnOnTheRealEngine: --cpus, then --memory with the --cpus
// the first turn recommends fixed, each probe a real run; the engine applied both limits to
// every probe of the second turn, as inspect reads them back, and a limit
// under which the kernel OOM killed the service missed the target.
func TestSearchInTurnOnTheRealEngine(t *testing.T) {
	m := enginetest.Manager(t)
	fs, errs := experiments.ParseFind([]byte(`{"name": "in turn", "service": {"kind": "http", "work_us": 2000, "alloc_kb": 16384, "gomaxprocs": "1"},
	  "load": {"rate": 20, "seconds": 3}, "target": {"p99_ms": 400, "errors_pct": 1},
	  "search": {"limit": "cpus", "min": "0.5", "max": "1.3", "resolution": "0.4", "repeats": 1},
	  "then": {"limit": "memory", "min": "8m", "max": "200m", "resolution": "96m", "repeats": 1}}`))
	if errs != nil {
		t.Fatal(errs)
	}
	s, err := m.Finder().Start(fs, "ada", "")
	if err != nil {
		t.Fatal(err)
	}
	wait := func(id string) workshop.SearchView {
		var v workshop.SearchView
		enginetest.WaitFor(t, 5*time.Minute, "search "+id+" to end", func() bool {
			v, _ = m.Finder().View(id)
			return v.State != workshop.SearchRunning
		})
		return v
	}
	first := wait(s.ID())
	if first.State != workshop.SearchDone || first.Answer == nil || !first.Answer.Found || first.Then == "" {
		t.Fatalf("the --cpus turn: %s (%s), answer %+v", first.State, first.Error, first.Answer)
	}
	second := wait(first.Then)
	t.Logf("--cpus %v after %d probes; then %s: %+v after %d probes", first.Answer.Limit, len(first.Probes), second.State, second.Answer, len(second.Probes))
	if second.State != workshop.SearchDone || second.Answer == nil || !second.Answer.Found || second.After != first.ID {
		t.Fatalf("the --memory turn: %s (%s), answer %+v", second.State, second.Error, second.Answer)
	}
	// Each request allocates 16 MiB: under --memory 8m (and 8m of swap)
	// the kernel kills the service, and that limit misses the target.
	killed := false
	for _, p := range second.Probes {
		killed = killed || p.Text == "8m" && p.Result != nil && strings.Contains(p.Result.Died, "OOM") && p.Meets != nil && !*p.Meets
	}
	if !killed {
		t.Errorf("no probe at 8m missed the target with its service OOM killed: %+v", second.Probes)
	}
	for _, p := range second.Probes {
		rv, ok := m.Archive().View(p.Run)
		if !ok || len(rv.Lanes) != 2 || rv.Lanes[0].Applied == nil {
			t.Fatalf("probe %s: run %v", p.Text, ok)
		}
		a := rv.Lanes[0].Applied
		t.Logf("probe at --memory %s: applied %+v, p99 %+v", p.Text, *a, p.Result)
		if specs.Value(strconv.FormatFloat(float64(a.NanoCPUs)/1e9, 'f', -1, 64)) != second.Spec.Fixed.CPUs || a.Memory != int64(p.Limit)<<20 {
			t.Errorf("probe at --memory %s: the engine applied %+v, want --cpus %s and that memory", p.Text, *a, second.Spec.Fixed.CPUs)
		}
	}
}

// BenchmarkRightSizeSearches runs the right-size lab's search three times
// on the real engine: their answers agree within two resolution steps.
// Then it sweeps the same grid, each limit once, for the probes and
// minutes a search saves, and where the sweep's own boundary lies.
func BenchmarkRightSizeSearches(b *testing.B) {
	for range b.N {
		m := enginetest.Manager(b)
		var answers []float64
		runs := 0
		start := time.Now()
		for i := range 3 {
			began := time.Now()
			v := rightSize(b, m)
			answers = append(answers, v.Answer.Limit)
			runs += v.Answer.Probes
			b.Logf("figure: search %d | --cpus %s, %d probe runs at %d limits, %.1f min", i+1,
				finder.LimitText("cpus", v.Answer.Limit), v.Answer.Probes, v.Answer.Steps, time.Since(began).Minutes())
		}
		searchMin := time.Since(start).Minutes() / 3
		spread := slices.Max(answers) - slices.Min(answers)
		b.Logf("answers %v: spread %.2f; %d probe runs in %.1f min", answers, spread, runs, 3*searchMin)
		b.ReportMetric(spread, "spread-cpus")
		b.ReportMetric(float64(runs)/3, "runs/search")
		b.ReportMetric(searchMin, "min/search")
		if spread > 2*0.1+1e-9 {
			b.Errorf("three searches' answers %v spread over %.2f, more than two resolution steps", answers, spread)
		}
		sweepMin, passes := sweep(b, m)
		b.Logf("figure: sweep | %d limits once each, %.1f min; met the target at %v", len(passes), sweepMin, passes)
		b.ReportMetric(sweepMin, "min/sweep")
	}
}

// sweep runs the right-size lab's service at every limit of its grid
// once, smallest first, and says at which the load's p99 met the target.
func sweep(b *testing.B, m *workshop.Manager) (minutes float64, met map[string]bool) {
	fs, errs := experiments.ParseFind([]byte(`{"lab": "right-size-go"}`))
	if errs != nil {
		b.Fatal(errs)
	}
	bis, errs := fs.Check()
	if errs != nil {
		b.Fatal(errs)
	}
	start := time.Now()
	met = map[string]bool{}
	for i := range bis.Limits() {
		limit := bis.Limit(i)
		spec := fs.ProbeSpec(limit)
		plan, errs := m.Pool().Validate(spec)
		if errs != nil {
			b.Fatal(errs)
		}
		r, err := m.SubmitFrom(spec, plan, "sweep", "")
		if err != nil {
			b.Fatal(err)
		}
		v := enginetest.WaitDone(b, r, 3*time.Minute)
		load := v.Lanes[1]
		if load.LatencyMs == nil || load.Requests == 0 {
			b.Fatalf("the sweep's run at --cpus %v measured no latency: %+v", limit, load)
		}
		met[finder.LimitText("cpus", limit)] = load.LatencyMs.P99 < fs.Target.P99Ms && 100*float64(load.Failures) < fs.Target.ErrorsPct*float64(load.Requests)
		b.Logf("sweep at --cpus %s: p99 %.1f ms", finder.LimitText("cpus", limit), load.LatencyMs.P99)
	}
	return time.Since(start).Minutes(), met
}

// TestFakeSearchHasADeadline: a search that runs past its deadline ends
// failed saying so, and its probe under way is stopped.
func TestFakeSearchHasADeadline(t *testing.T) {
	fake := enginefake.New()
	fake.Runtime = time.Minute
	fake.Summarize = enginefake.ServiceNeeding(0.6)
	m := fakeManager(t, fake, workshop.Options{SearchDeadline: 300 * time.Millisecond})
	fs, errs := experiments.ParseFind([]byte(searchSpec))
	if errs != nil {
		t.Fatal(errs)
	}
	s, err := m.Finder().Start(fs, "ada", "")
	if err != nil {
		t.Fatal(err)
	}
	v := waitSearch(t, m.Finder(), s.ID())
	if v.State != workshop.SearchFailed || !strings.Contains(v.Error, "deadline") {
		t.Errorf("a search past its deadline: %s %q", v.State, v.Error)
	}
	for _, p := range v.Probes {
		if rv, ok := m.Archive().View(p.Run); !ok || !rv.State.Ended() {
			t.Errorf("probe %s still %v after the search's deadline", p.Run, rv.State)
		}
	}
	// Its end frees the participant for another search.
	if _, err := m.Finder().Start(fs, "ada", ""); err != nil {
		t.Errorf("a search after the first ended: %v", err)
	}
}

// TestFakeFinderForgetsOldSearches: past MaxSearches the finder forgets
// the oldest ended searches while others start, end and are viewed at
// once (run under the race detector by make test-race).
func TestFakeFinderForgetsOldSearches(t *testing.T) {
	fake := enginefake.New()
	fake.Runtime = time.Minute
	fake.Summarize = enginefake.ServiceNeeding(0.6)
	m := fakeManager(t, fake, workshop.Options{MaxRunning: 4})
	fs, errs := experiments.ParseFind([]byte(searchSpec))
	if errs != nil {
		t.Fatal(errs)
	}
	var mu sync.Mutex
	var ids []string
	stop, viewed := make(chan struct{}), make(chan struct{})
	// A viewer of every search so far, until the last has started.
	go func() {
		defer close(viewed)
		for {
			select {
			case <-stop:
				return
			default:
			}
			mu.Lock()
			seen := slices.Clone(ids)
			mu.Unlock()
			for _, id := range seen {
				m.Finder().View(id)
			}
		}
	}()
	for i := 0; i < workshop.MaxSearches+20; i++ {
		s, err := m.Finder().Start(fs, fmt.Sprint("p", i), "")
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		ids = append(ids, s.ID())
		mu.Unlock()
		_ = m.Finder().Stop(s.ID())
	}
	close(stop)
	<-viewed
	for _, id := range ids {
		waitSearch(t, m.Finder(), id)
	}
	if _, ok := m.Finder().View(ids[0]); ok {
		t.Errorf("the first of %d searches is still kept", len(ids))
	}
	if v, ok := m.Finder().View(ids[len(ids)-1]); !ok || v.State != workshop.SearchStopped {
		t.Errorf("the last search: %v %s", ok, v.State)
	}
}
