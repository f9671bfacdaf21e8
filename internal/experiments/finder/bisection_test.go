package finder

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

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
