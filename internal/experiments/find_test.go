package experiments

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// service is a synthetic service's p99 under a CPU limit: it needs need
// cores, and its tail grows as the limit nears that.
func service(need float64) func(limit float64) float64 {
	return func(limit float64) float64 {
		if limit <= need {
			return 500
		}
		return math.Min(500, 4+2/(limit-need))
	}
}

// search runs a bisection to its end against p99 (with noise, relative),
// and returns it with the steps it ran.
func search(t *testing.T, b *Bisection, p99 func(float64) float64, noise float64, rng *rand.Rand) *Bisection {
	t.Helper()
	for range 200 {
		step, done := b.Next()
		if done {
			return b
		}
		v := p99(b.Limit(step))
		if rng != nil {
			v *= 1 + noise*(2*rng.Float64()-1)
		}
		b.Record(step, ProbeRun{P99Ms: v})
	}
	t.Fatal("the search did not end in 200 runs")
	return nil
}

func TestBisectionFindsTheSmallestPassingLimit(t *testing.T) {
	target := FindTarget{P99Ms: 50}
	need := 0.6 // the p99 is below 50 ms from 0.6435 cores on
	b, err := NewBisection(0.1, 2, 0.05, 3, target)
	if err != nil {
		t.Fatal(err)
	}
	search(t, b, service(need), 0, nil)
	a := b.Answer()
	// The grid's first step above 0.6435 is 0.65.
	if !a.Found || math.Abs(a.Limit-0.65) > 1e-9 || math.Abs(a.Below-0.6) > 1e-9 {
		t.Errorf("answer %+v, want 0.65 with 0.60 below", a)
	}
	// Bisection over 39 steps: Max, then about log2(39) halvings, each
	// one clear run; a grid sweep would run all 39.
	if a.Steps > 8 || a.Probes > 10 {
		t.Errorf("%d limits and %d runs, want about log2 of the 39 steps", a.Steps, a.Probes)
	}
	if !strings.Contains(a.BoundSay, "clearly") {
		t.Errorf("boundary %q", a.BoundSay)
	}
}

// Near the target a run's p99 decides nothing alone: the limit runs again,
// up to Repeats, and the answer stays within a step of the truth.
func TestBisectionRepeatsNearTheTarget(t *testing.T) {
	for seed := range 20 {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		b, _ := NewBisection(0.1, 2, 0.05, 4, FindTarget{P99Ms: 50})
		search(t, b, service(0.6), 0.2, rng)
		a := b.Answer()
		if !a.Found || a.Limit < 0.6-1e-9 || a.Limit > 0.7+1e-9 {
			t.Errorf("seed %d: answer %+v, want 0.65 within a step", seed, a)
		}
		for i := range 40 {
			rs := b.Runs(i)
			if len(rs) > 4 {
				t.Errorf("seed %d: %d runs at %.2f, over the 4 repeats", seed, len(rs), b.Limit(i))
			}
			// One run decides a limit only when it is clearly away from
			// the target.
			if len(rs) == 1 && math.Abs(rs[0].P99Ms-50) <= ClearMargin*50 {
				t.Errorf("seed %d: one run of p99 %.1f ms decided %.2f, within 25%% of the target", seed, rs[0].P99Ms, b.Limit(i))
			}
		}
	}
}

func TestBisectionAtItsBounds(t *testing.T) {
	b, _ := NewBisection(0.1, 0.5, 0.05, 2, FindTarget{P99Ms: 50})
	search(t, b, service(0.6), 0, nil)
	if a := b.Answer(); a.Found || a.Steps != 1 || !strings.Contains(a.BoundSay, "even at the search's maximum") {
		t.Errorf("a service that needs more than the maximum: %+v", a)
	}
	b, _ = NewBisection(1, 2, 0.1, 2, FindTarget{P99Ms: 50})
	search(t, b, service(0.6), 0, nil)
	if a := b.Answer(); !a.Found || a.Limit != 1 || !strings.Contains(a.BoundSay, "may lie below it") {
		t.Errorf("a service that meets its target at the minimum: %+v", a)
	}
	// Errors and throttling fail a limit whatever its p99.
	tgt := FindTarget{P99Ms: 50, ErrorsPct: 1, Throttled: 0.1}
	if tgt.Meets(ProbeRun{P99Ms: 5, ErrorsPct: 2}) || tgt.Meets(ProbeRun{P99Ms: 5, Throttled: 0.2}) || !tgt.Meets(ProbeRun{P99Ms: 5, Throttled: 0.1}) {
		t.Error("a target's errors or throttling not judged")
	}
}

func TestBisectionRefusesBadBounds(t *testing.T) {
	for _, c := range []struct {
		min, max, res float64
		repeats       int
		want          string
	}{
		{0, 1, 0.1, 1, "0 < min < max"},
		{1, 0.5, 0.1, 1, "0 < min < max"},
		{0.1, 1, 0, 1, "resolution"},
		{0.1, 1, 2, 1, "resolution"},
		{0.001, 100, 0.001, 1, "1000 steps"},
		{0.1, 1, 0.1, 0, "repeats"},
		{0.1, 1, 0.1, 11, "repeats"},
		{math.NaN(), 1, 0.1, 1, "0 < min < max"},
	} {
		if _, err := NewBisection(c.min, c.max, c.res, c.repeats, FindTarget{P99Ms: 1}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c, err, c.want)
		}
	}
	errs := FindTarget{P99Ms: -1, ErrorsPct: 101, Throttled: 2}.Check()
	if len(errs) != 3 || errs[0].Field != "target.p99_ms" || errs[1].Field != "target.errors_pct" || errs[2].Field != "target.throttled" {
		t.Errorf("target errors %+v", errs)
	}
}

func TestFindSpecChecksAndProbes(t *testing.T) {
	good := `{"name": "right-size", "service": {"kind": "http", "work_us": 4000, "gomaxprocs": "1"}, "load": {"rate": 150, "seconds": 8},
	  "target": {"p99_ms": 50, "errors_pct": 1}, "search": {"limit": "cpus", "min": "0.2", "max": "1.4", "resolution": "0.2"}}`
	fs, errs := ParseFind([]byte(good))
	if errs != nil {
		t.Fatal(errs)
	}
	b, errs := fs.Check()
	if errs != nil || b.Repeats != DefaultRepeats || b.Min != 0.2 || b.Max != 1.4 {
		t.Fatalf("%+v %v", b, errs)
	}
	if l := b.Limit(3); l != 0.8 {
		t.Errorf("step 3 of 0.2 by 0.2 is %v, want 0.8 to a millionth", l)
	}
	if need := fs.ServiceNeeds(); math.Abs(need-0.6) > 1e-9 {
		t.Errorf("the model says the service needs %.2f cores, want rate × work, 0.6", need)
	}
	probe := fs.ProbeSpec(0.6)
	if len(probe.Lanes) != 2 || probe.Lanes[0].Limits.CPUs != "0.6" || probe.Lanes[1].Workload.Target != ProbeService ||
		probe.Lanes[1].Workload.Rate != 150 || probe.Mode != specs.Sequential || !strings.Contains(probe.Name, "cpus 0.6") {
		t.Errorf("probe spec %+v", probe)
	}
	rec := fs.Recommend(b, Answer{Found: true, Limit: 0.8})
	if rec == nil || rec.Request != "0.8" || rec.Limit != "1" || !strings.Contains(rec.WhyLimit, "25%") {
		t.Errorf("recommendation %+v, want a request of 0.8 and a limit of 1 (0.8 + 25%% in 0.2 steps)", rec)
	}

	mem := strings.Replace(good, `"limit": "cpus", "min": "0.2", "max": "1.4", "resolution": "0.2"`, `"limit": "memory", "min": "32m", "max": "256m", "resolution": "16m"`, 1)
	fs, _ = ParseFind([]byte(mem))
	if b, errs := fs.Check(); errs != nil || b.Min != 32 || b.Max != 256 || fs.ProbeSpec(48).Lanes[0].Limits.Memory != "48m" {
		t.Errorf("a memory search: %+v %v", b, errs)
	}

	for _, c := range []struct{ body, field string }{
		{strings.Replace(good, `"kind": "http"`, `"kind": "spin"`, 1), "service.kind"},
		{strings.Replace(good, `"rate": 150`, `"rate": 150, "concurrency": 4`, 1), "load"},
		{strings.Replace(good, `"seconds": 8`, `"seconds": 600`, 1), "load.seconds"},
		{strings.Replace(good, `"p99_ms": 50`, `"p99_ms": 0`, 1), "target.p99_ms"},
		{strings.Replace(good, `"limit": "cpus"`, `"limit": "pids"`, 1), "search.limit"},
		{strings.Replace(good, `"max": "1.4"`, `"max": "lots"`, 1), "search.max"},
		{strings.Replace(good, `"max": "1.4"`, `"max": "0.1"`, 1), "search.max"},
		{strings.Replace(good, `"resolution": "0.2"`, `"resolution": "0.0001"`, 1), "search.resolution"},
		{strings.Replace(good, `"limit": "cpus"`, `"limit": "cpus", "repeats": 99`, 1), "search.repeats"},
	} {
		fs, errs := ParseFind([]byte(c.body))
		if errs == nil {
			_, errs = fs.Check()
		}
		if len(errs) == 0 || errs[0].Field != c.field {
			t.Errorf("%s: errors %+v, want one naming %s", c.body, errs, c.field)
		}
	}
	if _, errs := ParseFind([]byte(`{"Service": {}}`)); errs == nil {
		t.Error("a key in the wrong case was taken")
	}
}

func TestRightSizeLabIsASearch(t *testing.T) {
	fs, errs := ParseFind([]byte(`{"lab": "right-size-go"}`))
	if errs != nil {
		t.Fatal(errs)
	}
	if fs.Lab != "right-size-go" || fs.Service.WorkUS != 4000 || fs.Load.Rate != 150 || fs.Target.P99Ms != 50 || fs.Search.Limit != FindCPUs {
		t.Errorf("the lab's search %+v", fs)
	}
	if _, errs := fs.Check(); errs != nil {
		t.Error(errs)
	}
	if math.Abs(fs.ServiceNeeds()-0.6) > 1e-9 {
		t.Errorf("the lab's floor %.2f, want 0.6", fs.ServiceNeeds())
	}
	for body, want := range map[string]string{
		`{"lab": "cpus-ladder"}`:                 "not a search",
		`{"lab": "nope"}`:                        "no lab",
		`{"lab": "right-size-go", "name": "x"}`:  "either a lab or a search",
		`{"lab": "right-size-go", "load": null}`: "", // null is no value: the lab's own
	} {
		_, errs := ParseFind([]byte(body))
		if want == "" {
			if errs != nil {
				t.Errorf("%s: %v", body, errs)
			}
			continue
		}
		if errs == nil || errs[0].Field != "lab" || !strings.Contains(errs[0].Message, want) {
			t.Errorf("%s: %v, want lab: %q", body, errs, want)
		}
	}
	judged, pass, text := JudgeFind(fs, Answer{Found: true, Limit: 0.8})
	if !judged || !pass || !strings.Contains(text, "0.6 cores") {
		t.Errorf("an answer above the floor: %v %v %q", judged, pass, text)
	}
	if _, pass, _ := JudgeFind(fs, Answer{Found: true, Limit: 0.6}); pass {
		t.Error("an answer at the floor judged as predicted")
	}
	lab, _ := LabByID("right-size-go")
	raw, _ := json.Marshal(lab)
	broken := strings.Replace(string(raw), `"p99_ms":50`, `"p99_ms":-1`, 1)
	if _, b := ParseLabFile("broken.json", []byte(broken)); b == nil || b.Field != "find.target.p99_ms" {
		t.Errorf("a search lab with a bad target: %+v", b)
	}
}

// A search's second turn searches the other limit, with the first's
// answer fixed; fixed limits hold in every probe, and are never one a
// turn searches.
func TestSearchInTurn(t *testing.T) {
	base := `{"service": {"kind": "http", "work_us": 4000}, "load": {"rate": 150, "seconds": 8}, "target": {"p99_ms": 50},
	  "search": {"limit": "cpus", "min": "0.2", "max": "2", "resolution": "0.1"}`
	fs, errs := ParseFind([]byte(base + `, "then": {"limit": "memory", "min": "16m", "max": "256m", "resolution": "16m"}, "fixed": {"pids-limit": "64"}}`))
	if errs != nil {
		t.Fatal(errs)
	}
	if _, errs := fs.Check(); errs != nil {
		t.Fatal(errs)
	}
	next, ok := fs.Following("0.7")
	if !ok || next.Search.Limit != FindMemory || next.Then != nil || next.Fixed.CPUs != "0.7" || next.Fixed.PidsLimit != "64" {
		t.Fatalf("the second turn: %+v", next)
	}
	if _, errs := next.Check(); errs != nil {
		t.Fatal(errs)
	}
	lanes := next.ProbeSpec(96).Lanes
	if l := lanes[0].Limits; l.CPUs != "0.7" || l.Memory != "96m" || l.PidsLimit != "64" {
		t.Errorf("the second turn's probe limits %+v", l)
	}
	if _, ok := next.Following("96m"); ok {
		t.Error("a second turn has a third")
	}
	for tail, field := range map[string]string{
		`, "then": {"limit": "cpus", "min": "0.2", "max": "1", "resolution": "0.1"}}`:   "then.limit",
		`, "then": {"limit": "memory", "min": "16m", "max": "8m", "resolution": "8m"}}`: "then.max",
		`, "then": {"limit": "memory", "min": "x", "max": "8m", "resolution": "1m"}}`:   "then.min",
		`, "fixed": {"cpus": "1"}}`: "fixed.cpus",
		`, "then": {"limit": "memory", "min": "16m", "max": "64m", "resolution": "16m"}, "fixed": {"memory": "1g"}}`: "fixed.memory",
	} {
		fs, errs := ParseFind([]byte(base + tail))
		if errs == nil {
			_, errs = fs.Check()
		}
		if len(errs) == 0 || errs[0].Field != field {
			t.Errorf("%s: %v, want %s", tail, errs, field)
		}
	}
}

// A limit under which the service died (OOM killed) misses the target in
// one run, whatever its other figures read.
func TestADeadServiceMissesTheTarget(t *testing.T) {
	target := FindTarget{P99Ms: 50}
	died := ProbeRun{Died: "the kernel OOM killed the service", ErrorsPct: 100}
	if target.Meets(died) {
		t.Error("a dead service met the target")
	}
	b, err := NewBisection(16, 64, 16, 3, target)
	if err != nil {
		t.Fatal(err)
	}
	b.Record(0, died)
	if done, pass := b.decided(0); !done || pass {
		t.Errorf("one dead run decided %v, passed %v; want it decided, missed", done, pass)
	}
}
