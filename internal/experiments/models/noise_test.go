package models

import (
	"math"
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/experiments/specs"
)

func TestNoiseEffect(t *testing.T) {
	one := CPUDemand{Threads: 1}
	for _, c := range []struct {
		name    string
		lanes   []CPUDemand
		foreign float64
		want    []float64
	}{
		{"a CPU to spare takes the load", []CPUDemand{one}, 0.5, []float64{1}},
		{"busy loops that took 4/3 of a CPU beside one lane", []CPUDemand{one}, 4.0 / 3, []float64{2.0 / 3}},
		{"a little beside two lanes that fill the host", []CPUDemand{one, one}, 0.2, []float64{0.9, 0.9}},
		{"a lane under its quota keeps it", []CPUDemand{{Threads: 1, Quota: 0.5}}, 1.5, []float64{1}},
		{"no load", []CPUDemand{one, one}, 0, []float64{1, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := NoiseEffect(c.lanes, 2, c.foreign)
			for i := range c.want {
				if math.Abs(got[i]-c.want[i]) > 1e-9 {
					t.Errorf("kept %v, want %v", got, c.want)
				}
			}
		})
	}
}

func TestJudgeNoise(t *testing.T) {
	one := CPUDemand{Threads: 1}
	capped := CPUDemand{Threads: 1, Quota: 0.25}
	// The noisy-neighbour lab's phases, the victim first: alone, beside
	// two burners, beside the burners throttled.
	phases := func(foreign float64) []NoisyRow {
		return []NoisyRow{
			{Name: "phase 1", Lanes: []CPUDemand{one}, Foreign: foreign},
			{Name: "phase 2", Lanes: []CPUDemand{one, one, one}, Foreign: foreign},
			{Name: "phase 3", Lanes: []CPUDemand{one, capped, capped}, Foreign: foreign},
		}
	}
	v := Verdict{Judged: true, Metric: specs.MetricPhaseRecovery, Tolerance: 0.2, Explanation: "not as predicted"}
	if got := JudgeNoise(v, 2, phases(0.05)); got.Inconclusive {
		t.Errorf("a quiet host: %+v", got)
	}
	busy := JudgeNoise(v, 2, phases(1.3))
	if !busy.Inconclusive || busy.Pass || !strings.Contains(busy.Noise, "1.30 cores") ||
		!strings.HasPrefix(busy.Explanation, "inconclusive: ") || !strings.Contains(busy.Explanation, "What was measured: not as predicted") {
		t.Errorf("two busy loops beside the lab: %+v", busy)
	}
	// A verdict whose figures held is inconclusive all the same, and
	// says that they held; one that failed does not.
	v.Pass = true
	if held := JudgeNoise(v, 2, phases(1.3)); !held.Inconclusive || held.Pass || !held.Held {
		t.Errorf("figures within the tolerance on a busy host: %+v", held)
	}
	if busy.Held {
		t.Errorf("a failed verdict on a busy host says it held: %+v", busy)
	}
	// Lanes that each want more than they get lose alike: their ratios
	// do not move.
	shares := Verdict{Judged: true, Pass: true, Metric: specs.MetricCPU, Tolerance: 0.1}
	lanes := []CPUDemand{{Threads: 2, Shares: 512}, {Threads: 2, Shares: 1024}}
	var rows []NoisyRow
	for i := range lanes {
		rows = append(rows, NoisyRow{Name: "the window every lane ran in", Lanes: lanes, Lane: i, Foreign: 0.3})
	}
	if got := JudgeNoise(shares, 2, rows); got.Inconclusive {
		t.Errorf("a third of a CPU beside lanes that share the host by weight: %+v", got)
	}
	// But where one lane is held by its threads and the others are not,
	// the load moves their ratio (the model's 1 : 2 : 3 becomes 1 : 2 : 4).
	capped3 := []CPUDemand{{Threads: 1, Shares: 512}, {Threads: 1, Shares: 1024}, {Threads: 1, Shares: 2048}}
	rows = rows[:0]
	for i := range capped3 {
		rows = append(rows, NoisyRow{Name: "the window every lane ran in", Lanes: capped3, Lane: i, Foreign: 0.3})
	}
	if got := JudgeNoise(shares, 2, rows); !got.Inconclusive {
		t.Errorf("a third of a CPU beside a lane held at one thread: %+v", got)
	}
	// Sequential lanes alone, the first on a busy host: its wall time is
	// the reference of the others.
	wall := Verdict{Judged: true, Pass: true, Metric: specs.MetricWallTime, Tolerance: 0.1}
	seq := []NoisyRow{{Name: "cpus=1", Lanes: []CPUDemand{one}, Foreign: 1.5}, {Name: "cpus=.5", Lanes: []CPUDemand{{Threads: 1, Quota: 0.5}}}}
	if got := JudgeNoise(wall, 2, seq); !got.Inconclusive || !strings.Contains(got.Noise, "cpus=1") {
		t.Errorf("the reference lane beside a busy loop and a half: %+v", got)
	}
	io := JudgeNoise(Verdict{Judged: true, Pass: true, Metric: specs.MetricIOLimit, Tolerance: 0.15}, 2, seq)
	if io.Inconclusive {
		t.Error("an IO verdict made inconclusive by CPU load")
	}
}

// TestTheNoiseBand: a verdict the host's load made inconclusive holds
// when each figure lies within the tolerance of the range between the
// plain prediction and the one with the other work served first, and not
// when a figure lies beyond it. The figures are the QoS lab's on the test
// cluster, its control plane on the same two CPUs.
func TestTheNoiseBand(t *testing.T) {
	lanes := []CPUDemand{{Threads: 2, Quota: 1, Shares: 1024}, {Threads: 2, Shares: 512}, {Threads: 2, Shares: 2}}
	rows := func(foreign float64) []NoisyRow {
		var rs []NoisyRow
		for i := range lanes {
			rs = append(rs, NoisyRow{Name: "the window every lane ran in", Lanes: lanes, Lane: i, Foreign: foreign})
		}
		return rs
	}
	for _, c := range []struct {
		name     string
		measured []float64
		foreign  float64
		held     bool
	}{
		{"the Burstable pod short by the control plane's share", []float64{1, 0.79, 0.03}, 0.24, true},
		{"short by more than the control plane took", []float64{1, 0.5, 0.03}, 0.24, false},
		{"the BestEffort pod far past starved", []float64{1, 0.79, 0.3}, 0.24, false},
	} {
		v := Verdict{Judged: true, Metric: specs.MetricCPU, Tolerance: 0.2, Predicted: []float64{1, 1, 0.004}, Measured: c.measured, Explanation: "measured"}
		got := JudgeNoise(v, 2, rows(c.foreign))
		if !got.Inconclusive || got.Pass || got.Held != c.held || !strings.Contains(got.Explanation, "With that other work served first, the model predicts 1.00 : 0.76") {
			t.Errorf("%s: inconclusive %v, pass %v, held %v (want %v): %s", c.name, got.Inconclusive, got.Pass, got.Held, c.held, got.Explanation)
		}
	}
}

// TestPhaseShares: the noisy-neighbour lab's victim alone, beside two
// burners (three runnable threads on two CPUs: two thirds each), and
// beside the burners held to a quarter of a CPU each (its whole CPU back).
// A verdict judges the middle phase against it, and says so.
func TestPhaseShares(t *testing.T) {
	one, tamed := CPUDemand{Threads: 1}, CPUDemand{Threads: 1, Quota: 0.25}
	rows := []NoisyRow{
		{Name: "phase 1", Lanes: []CPUDemand{one}},
		{Name: "phase 2", Lanes: []CPUDemand{one, one, one}},
		{Name: "phase 3", Lanes: []CPUDemand{one, tamed, tamed}},
	}
	got := PhaseShares(rows, 2)
	want := []float64{1, 2.0 / 3, 1}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-9 {
			t.Fatalf("shares %v, want %v", got, want)
		}
	}
	spec := specs.VerdictSpec{Metric: specs.MetricPhaseRecovery, Tolerance: 0.2}
	plan := specs.Plan{Lanes: []specs.PlannedLane{{Name: "victim"}}}
	for _, c := range []struct {
		rates []float64
		pass  bool
	}{
		{[]float64{1, 0.645, 0.95}, true},
		{[]float64{1, 0.4, 0.95}, false}, // fell further than its share
		{[]float64{1, 0.645, 0.7}, false},
	} {
		v := JudgeIO(spec, plan, []IOOutcome{{Completed: true, PhaseRates: c.rates, PhaseCores: true, PhasePredicted: got}}, QueueLimits{})
		if v.Pass != c.pass || math.Abs(v.Predicted[1]-2.0/3) > 1e-9 || !strings.Contains(v.Explanation, "predicts 0.67 and 1.00") {
			t.Errorf("rates %v: pass %v (want %v), predicted %v: %s", c.rates, v.Pass, c.pass, v.Predicted, v.Explanation)
		}
	}
}
