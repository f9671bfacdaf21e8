package models

import (
	"math"
	"testing"

	"github.com/limitlab/limitlab/internal/experiments/specs"
)

func TestGoThreads(t *testing.T) {
	cases := []struct {
		gomaxprocs specs.Value
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
		if got := GoThreads(specs.Workload{Kind: specs.KindHTTP, GOMAXPROCS: c.gomaxprocs}, c.quota, c.ncpu); got != c.want {
			t.Errorf("GOMAXPROCS %q, --cpus %g on %d CPUs: %d threads, want %d", c.gomaxprocs, c.quota, c.ncpu, got, c.want)
		}
	}
}

func TestJudgeThrottling(t *testing.T) {
	svc := func(name string, g specs.Value) specs.PlannedLane {
		return specs.PlannedLane{Name: name, Workload: specs.Workload{Kind: specs.KindHTTP, GOMAXPROCS: g}, Resources: specs.Resources{NanoCPUs: 1e9}, Target: -1}
	}
	load := specs.PlannedLane{Name: "ab", Workload: specs.Workload{Kind: specs.KindLoad}, Target: 0}
	plan := specs.Plan{Lanes: []specs.PlannedLane{svc("host", "host"), load, svc("one", "1"), load}}
	spec := specs.VerdictSpec{Metric: specs.MetricThrottling, Tolerance: 0.25}
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

// TestParallelism: a service's threads run at once on the CPUs its load
// and the host's other work leave them while it is not throttled.
func TestParallelism(t *testing.T) {
	for _, c := range []struct {
		name                  string
		n                     int
		quota                 float64
		cpus                  int
		beside, foreign, want float64
	}{
		{"nothing beside it", 2, 1, 2, 0, 0, 2},
		{"a load of 0.15 cores and 0.05 of other work", 2, 1, 2, 0.15, 0.05, 1.95 / 1.15},
		{"CPUs to spare", 2, 1, 8, 0.15, 0.05, 2},
		{"no quota", 2, 0, 2, 0.5, 0.5, 2},
		{"a host taken whole", 2, 1, 2, 0, 3, 0},
	} {
		if got := Parallelism(c.n, c.quota, c.cpus, c.beside, c.foreign); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: %.4f threads at once, want %.4f", c.name, got, c.want)
		}
	}
	// The GOMAXPROCS lab's first service beside such a load: 1 − 1/1.70.
	if p := Parallelism(2, 1, 2, 0.15, 0.05); math.Abs((1-1/p)-0.41) > 0.005 {
		t.Errorf("throttled share %.3f, want 0.41", 1-1/p)
	}
}
