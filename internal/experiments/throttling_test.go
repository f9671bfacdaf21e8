package experiments

import (
	"math"
	"testing"
)

func TestGoThreads(t *testing.T) {
	cases := []struct {
		gomaxprocs Value
		quota      float64
		ncpu, want int
	}{
		{"host", 1, 2, 2},
		{"auto", 1, 2, 2}, // Go 1.25: at least 2
		{"auto", 3.5, 8, 4},
		{"auto", 0, 8, 8},
		{"1", 1, 2, 1},
		{"16", 1, 2, 2},
	}
	for _, c := range cases {
		if got := GoThreads(Workload{Kind: KindHTTP, GOMAXPROCS: c.gomaxprocs}, c.quota, c.ncpu); got != c.want {
			t.Errorf("GOMAXPROCS %q, --cpus %g on %d CPUs: %d threads, want %d", c.gomaxprocs, c.quota, c.ncpu, got, c.want)
		}
	}
}

func TestJudgeThrottling(t *testing.T) {
	svc := func(name string, g Value) PlannedLane {
		return PlannedLane{Name: name, Workload: Workload{Kind: KindHTTP, GOMAXPROCS: g}, Resources: Resources{NanoCPUs: 1e9}, Target: -1}
	}
	load := PlannedLane{Name: "ab", Workload: Workload{Kind: KindLoad}, Target: 0}
	plan := Plan{Lanes: []PlannedLane{svc("host", "host"), load, svc("one", "1"), load}}
	spec := VerdictSpec{Metric: MetricThrottling, Tolerance: 0.25}
	// Throttled seconds (summed over CPUs) in a 4 s run of 40 periods, of
	// which throttled: as measured here, 3.7 s for GOMAXPROCS 2 under
	// --cpus 1 (two threads held for half of each period on two CPUs), and
	// 0.01 s for GOMAXPROCS 1, once counted throttled in 26 of 43 periods.
	done := func(throttledS float64, th uint64) ThrottleOutcome {
		return ThrottleOutcome{Completed: true, Periods: 40, Throttled: th, ThrottledNs: uint64(throttledS * 1e9), Wall: 4}
	}
	v := JudgeThrottling(spec, plan, []ThrottleOutcome{done(3.7, 37), {}, done(0.01, 26), {}}, 2)
	if !v.Judged || !v.Pass || len(v.Predicted) != 2 || v.Predicted[0] != 0.5 || v.Predicted[1] != 0 || math.Abs(v.Measured[0]-0.4625) > 1e-9 || v.Measured[1] > 0.01 {
		t.Errorf("verdict %+v", v)
	}
	if v := JudgeThrottling(spec, plan, []ThrottleOutcome{done(0.5, 30), {}, done(0.01, 4), {}}, 2); !v.Judged || v.Pass {
		t.Errorf("a GOMAXPROCS=host service throttled for 6%% of its CPUs' time passes: %+v", v)
	}
	if v := JudgeThrottling(spec, plan, []ThrottleOutcome{done(3.7, 37), {}, done(2, 30), {}}, 2); !v.Judged || v.Pass {
		t.Errorf("a GOMAXPROCS=1 service throttled for half its time passes: %+v", v)
	}
	if v := JudgeThrottling(spec, plan, []ThrottleOutcome{done(3.7, 37), {}, {}, {}}, 2); v.Judged {
		t.Errorf("judged with a lane that did not finish: %+v", v)
	}
}
