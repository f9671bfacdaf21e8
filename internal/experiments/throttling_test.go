package experiments

import "testing"

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
	spec := VerdictSpec{Metric: MetricThrottling, Tolerance: 0.4}
	done := func(p, th uint64) ThrottleOutcome { return ThrottleOutcome{Completed: true, Periods: p, Throttled: th} }
	v := JudgeThrottling(spec, plan, []ThrottleOutcome{done(100, 85), {}, done(100, 10), {}}, 2)
	if !v.Judged || !v.Pass || len(v.Predicted) != 2 || v.Predicted[0] != 1 || v.Predicted[1] != 0 || v.Measured[0] != 0.85 {
		t.Errorf("verdict %+v", v)
	}
	if v := JudgeThrottling(spec, plan, []ThrottleOutcome{done(100, 30), {}, done(100, 10), {}}, 2); !v.Judged || v.Pass {
		t.Errorf("a GOMAXPROCS=host service throttled in 30%% of periods passes: %+v", v)
	}
	if v := JudgeThrottling(spec, plan, []ThrottleOutcome{done(100, 85), {}, {}, {}}, 2); v.Judged {
		t.Errorf("judged with a lane that did not finish: %+v", v)
	}
}
