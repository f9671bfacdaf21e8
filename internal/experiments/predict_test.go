package experiments

import (
	"math"
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/experiments/kernelfiles"
	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

func labPlan(t *testing.T, id string) specs.Plan {
	t.Helper()
	spec, errs := Parse([]byte(`{"lab": "` + id + `"}`))
	if errs != nil {
		t.Fatal(errs)
	}
	plan, errs := Validate(spec, specs.Host{NCPU: 2, DataRootDevice: "/dev/vda"})
	if errs != nil {
		t.Fatal(errs)
	}
	return plan
}

func outcomes(plan specs.Plan, walls, cpus []float64) []models.LaneOutcome {
	out := make([]models.LaneOutcome, len(walls))
	for i := range walls {
		out[i] = models.LaneOutcome{Wall: walls[i], CPUSeconds: cpus[i], Completed: true, Applied: plan.Lanes[i].Resources}
	}
	return out
}

func TestPredictAndJudgeTheLabs(t *testing.T) {
	v2 := models.ModelHost{NCPU: 2}
	tests := []struct {
		lab         string
		walls, cpus []float64
		predicted   []float64
		pass        bool
	}{
		// Seed 000: 1 : 1 : 2 : 4, measured close.
		{"cpus-ladder", []float64{2.4, 2.45, 4.9, 9.8}, []float64{2.4, 2.45, 2.45, 2.45}, []float64{1, 1, 2, 4}, true},
		// The quarter-CPU lane 15% slow: beyond 10%.
		{"cpus-ladder", []float64{2.4, 2.4, 4.8, 11}, []float64{2.4, 2.4, 2.4, 2.4}, []float64{1, 1, 2, 4}, false},
		// Seed 001: 14%, 29%, 57% of one CPU.
		{"shares-contention", []float64{8, 8, 8}, []float64{1.14, 2.29, 4.57}, []float64{1, 2, 4}, true},
		{"shares-spare-cpu", []float64{6, 6}, []float64{6, 5.9}, []float64{1, 1}, true},
		{"threads-vs-cpus", []float64{1.3, 2.6, 5.3}, []float64{2.6, 2.6, 2.6}, []float64{1, 2, 4}, true},
		{"cpuset-two-threads", []float64{1.3, 2.6}, []float64{2.6, 2.6}, []float64{1, 2}, true},
		{"quota-period", []float64{1.8, 1.8, 1.85}, []float64{0.9, 0.9, 0.92}, []float64{1, 1, 1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.lab, func(t *testing.T) {
			plan := labPlan(t, tt.lab)
			out := outcomes(plan, tt.walls, tt.cpus)
			pred := models.Predict(plan, v2, out, nil)
			v := models.Judge(*plan.Verdict, plan, pred, out)
			if !v.Judged {
				t.Fatalf("not judged: %s", v.Explanation)
			}
			for i, want := range tt.predicted {
				if math.Abs(v.Predicted[i]-want) > 1e-6 {
					t.Fatalf("predicted %v, want %v", v.Predicted, tt.predicted)
				}
			}
			if v.Pass != tt.pass {
				t.Errorf("pass = %v, want %v: %s", v.Pass, tt.pass, v.Explanation)
			}
		})
	}
}

func TestPredictAbsoluteWall(t *testing.T) {
	plan := labPlan(t, "cpus-ladder")
	out := outcomes(plan, []float64{2.4, 2.4, 4.8, 9.6}, []float64{2.4, 2.4, 2.4, 2.4})
	pred := models.Predict(plan, models.ModelHost{NCPU: 2}, out, nil)
	for i, want := range []float64{2.4, 2.4, 4.8, 9.6} {
		if !pred.Lanes[i].OK || math.Abs(pred.Lanes[i].Wall-want) > 1e-6 {
			t.Errorf("lane %d: %+v, want wall %g", i, pred.Lanes[i], want)
		}
	}
}

func TestPredictWithALiveChange(t *testing.T) {
	spec := specs.Spec{Lanes: []specs.Lane{{Workload: specs.Workload{Kind: specs.KindSpin, Seconds: 4}, Limits: specs.Limits{CPUs: "1"}}}}
	plan, errs := Validate(spec, twoCPUs)
	if errs != nil {
		t.Fatal(errs)
	}
	out := []models.LaneOutcome{{Wall: 4, CPUSeconds: 2.5, Completed: true, Applied: plan.Lanes[0].Resources}}
	// From 2s on, a quarter of a CPU: 2 × 1 + 2 × 0.25 = 2.5 CPU seconds.
	pred := models.Predict(plan, models.ModelHost{NCPU: 2}, out, []models.Change{{At: 2, Lane: 0, Applied: specs.Resources{NanoCPUs: 25e7}}})
	if got := pred.Lanes[0].Cores; math.Abs(got-2.5/4) > 1e-6 {
		t.Errorf("predicted cores %g, want %g", got, 2.5/4)
	}
}

func TestJudgeDoesNotJudgeWhatItCannot(t *testing.T) {
	plan := labPlan(t, "cpus-ladder")
	out := outcomes(plan, []float64{2.4, 2.4, 4.8, 9.6}, []float64{2.4, 2.4, 2.4, 2.4})
	out[3].Completed = false
	pred := models.Predict(plan, models.ModelHost{NCPU: 2}, out, nil)
	if v := models.Judge(*plan.Verdict, plan, pred, out); v.Judged || !strings.Contains(v.Explanation, "lane 4") {
		t.Errorf("verdict %+v", v)
	}
	mem := labPlan(t, "memory-oom")
	if mem.Verdict != nil || models.DefaultVerdict(mem) != nil {
		t.Error("the memory lab has a CPU verdict")
	}
}

func TestWeightOfShares(t *testing.T) {
	for _, tt := range []struct {
		shares int64
		v2     bool
		want   float64
	}{{512, false, 512}, {0, false, 1024}, {1024, true, 39}, {512, true, 20}, {2048, true, 79}, {2, true, 1}, {262144, true, 10000}} {
		if got := kernelfiles.WeightOfShares(tt.shares, tt.v2); got != tt.want {
			t.Errorf("WeightOfShares(%d, v2=%v) = %g, want %g", tt.shares, tt.v2, got, tt.want)
		}
	}
}

func TestChangesUseTheWholeLife(t *testing.T) {
	spec := specs.Spec{Mode: specs.Parallel, Lanes: []specs.Lane{
		{Name: "a", Workload: specs.Workload{Kind: specs.KindSpin, Seconds: 4}, Limits: specs.Limits{CPUs: "1"}},
		{Name: "b", Workload: specs.Workload{Kind: specs.KindSpin, Seconds: 4}},
	}}
	plan, errs := Validate(spec, twoCPUs)
	if errs != nil {
		t.Fatal(errs)
	}
	out := []models.LaneOutcome{
		{Wall: 4, CPUSeconds: 2.5, Completed: true, Applied: plan.Lanes[0].Resources, WindowCores: 0.6},
		{Wall: 4, CPUSeconds: 4, Completed: true, Applied: plan.Lanes[1].Resources, WindowCores: 1},
	}
	changes := []models.Change{{At: 2, Lane: 0, Applied: specs.Resources{NanoCPUs: 25e7}}}
	pred := models.Predict(plan, models.ModelHost{NCPU: 2}, out, changes)
	if pred.Together != nil {
		t.Errorf("an allotment at the start is used after a live change: %v", pred.Together)
	}
	v := models.Judge(*models.DefaultVerdict(plan), plan, pred, out)
	if !v.Judged || math.Abs(v.Predicted[1]-1.6) > 1e-6 || math.Abs(v.Measured[1]-1.6) > 1e-6 || !v.Pass {
		t.Errorf("verdict %+v", v)
	}
}

func TestJudgeIO(t *testing.T) {
	plan := labPlan(t, "io-read-limits")
	out := []models.IOOutcome{{Completed: true, IOPS: 195, Throughput: 0.76}, {Completed: true, IOPS: 10.2, Throughput: 10.2}}
	v := models.JudgeIO(*plan.Verdict, plan, out, models.QueueLimits{MaxSectorsKB: 4096})
	if !v.Judged || !v.Pass || v.Predicted[0] != 200 || v.Predicted[1] != 10 || v.Measured[0] != 195 || v.Measured[1] != 10.2 {
		t.Errorf("verdict %+v", v)
	}
	out[1].Throughput = 7
	if v := models.JudgeIO(*plan.Verdict, plan, out, models.QueueLimits{}); v.Pass {
		t.Errorf("7 MiB/s under a 10mb limit passed: %+v", v)
	}
	noisy := labPlan(t, "noisy-neighbour-io")
	victim := make([]models.IOOutcome, len(noisy.Lanes))
	victim[0] = models.IOOutcome{Completed: true, PhaseRates: []float64{1000, 400, 950}}
	if v := models.JudgeIO(*noisy.Verdict, noisy, victim, models.QueueLimits{}); !v.Judged || !v.Pass || v.Measured[1] != 0.4 {
		t.Errorf("recovery verdict %+v", v)
	}
	victim[0].PhaseRates = []float64{1000, 400, 600}
	if v := models.JudgeIO(*noisy.Verdict, noisy, victim, models.QueueLimits{}); v.Pass {
		t.Errorf("a victim at 60%% passed: %+v", v)
	}
	// Six readers at depth 4 share 2400 operations a second: the victim
	// should get a sixth of them, 400, which is 0.40 of its 1000 alone.
	victim[0].PhaseRates = []float64{1000, 400, 950}
	victim[0].PhaseDisk = []models.DiskLoad{{IOPS: 1000, Depth: 4}, {IOPS: 2400, Depth: 24}, {IOPS: 1050, Depth: 24, Held: true}}
	if v := models.JudgeIO(*noisy.Verdict, noisy, victim, models.QueueLimits{}); !v.Pass || math.Abs(v.Predicted[1]-0.4) > 1e-9 || !strings.Contains(v.Explanation, "4/24") {
		t.Errorf("a victim at its share: %+v", v)
	}
	victim[0].PhaseRates = []float64{1000, 200, 950}
	if v := models.JudgeIO(*noisy.Verdict, noisy, victim, models.QueueLimits{}); v.Pass || v.Inconclusive {
		t.Errorf("a victim at half its share passed: %+v", v)
	}
	// Half its share, beside readers the device served within 30% of
	// each other: two standard errors reach the tolerance, so the disk
	// could have decided it.
	victim[0].PhaseErrors = []float64{0.01, 0.01, 0.01}
	victim[0].PhaseDisk[1].Spread = 0.3
	if v := models.JudgeIO(*noisy.Verdict, noisy, victim, models.QueueLimits{}); !v.Inconclusive || !strings.Contains(v.Noise, "unequally") {
		t.Errorf("half its share beside unequally served readers: %+v", v)
	}
	victim[0].PhaseDisk[1].Spread = 0.05
	if v := models.JudgeIO(*noisy.Verdict, noisy, victim, models.QueueLimits{}); v.Inconclusive || v.Pass {
		t.Errorf("half its share beside evenly served readers: %+v", v)
	}
	if s := models.ShareSpread([]float64{1600, 1833, 1529, 1842, 2193}); math.Abs(s-0.1446) > 0.0005 {
		t.Errorf("ShareSpread = %.4f, want 0.1446", s)
	}
	victim[0].PhaseErrors = nil
	victim[0].PhaseDisk[1].Held = true
	if v := models.JudgeIO(*noisy.Verdict, noisy, victim, models.QueueLimits{}); v.Predicted[1] != 0 || !strings.Contains(v.Explanation, "throttle or weight") {
		t.Errorf("a held middle phase was predicted: %+v", v)
	}
	victim[0].PhaseDisk = nil
	// 25% off: within two standard errors of the tolerance on a disk
	// whose samples spread 5% a phase, beyond them on one that spreads 1%.
	victim[0].PhaseRates = []float64{1000, 200, 1250}
	victim[0].PhaseErrors = []float64{0.05, 0.05, 0.05}
	if v := models.JudgeIO(*noisy.Verdict, noisy, victim, models.QueueLimits{}); !v.Inconclusive || v.Pass || !strings.Contains(v.Noise, "too noisy") {
		t.Errorf("25%% off on a noisy disk: %+v", v)
	}
	victim[0].PhaseErrors = []float64{0.01, 0.01, 0.01}
	if v := models.JudgeIO(*noisy.Verdict, noisy, victim, models.QueueLimits{}); v.Inconclusive || v.Pass {
		t.Errorf("25%% off on a quiet disk: %+v", v)
	}
	victim[0].PhaseRates, victim[0].PhaseErrors = []float64{1000, 400, 600}, []float64{0.05, 0.05, 0.05}
	if v := models.JudgeIO(*noisy.Verdict, noisy, victim, models.QueueLimits{}); v.Inconclusive || v.Pass {
		t.Errorf("40%% off is beyond the noise: %+v", v)
	}
}

func TestRequestsPerOp(t *testing.T) {
	for _, tt := range []struct {
		bs   int
		q    models.QueueLimits
		want float64
	}{
		{1 << 20, models.QueueLimits{MaxSectorsKB: 512, MaxSegments: 128}, 2},  // the write-up's disk
		{1 << 20, models.QueueLimits{MaxSectorsKB: 4096, MaxSegments: 254}, 1}, // this host's
		{2 << 20, models.QueueLimits{MaxSectorsKB: 4096, MaxSegments: 254}, 2},
		{8 << 20, models.QueueLimits{MaxSectorsKB: 4096, MaxSegments: 254}, 8},
		{4096, models.QueueLimits{MaxSectorsKB: 4096, MaxSegments: 254}, 1},
		{1 << 20, models.QueueLimits{}, 1},
	} {
		if got := models.RequestsPerOp(tt.bs, tt.q); got != tt.want {
			t.Errorf("RequestsPerOp(%d, %+v) = %g, want %g", tt.bs, tt.q, got, tt.want)
		}
	}
}
