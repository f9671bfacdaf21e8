package models

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestAllotFromTheSeeds(t *testing.T) {
	one := func(quota, shares float64, cpus ...int) CPUDemand {
		return CPUDemand{Threads: 1, Quota: quota, Shares: shares, CPUs: cpus}
	}
	tests := []struct {
		name  string
		ncpu  int
		lanes []CPUDemand
		want  []float64
	}{
		// Seed 001: three groups at 512/1024/2048 shares on one busy CPU.
		{"shares 512/1024/2048 on one CPU", 2, []CPUDemand{one(0, 512, 0), one(0, 1024, 0), one(0, 2048, 0)}, []float64{1.0 / 7, 2.0 / 7, 4.0 / 7}},
		// Seed 000, docker stats: --cpus 2, 1, .5, .25, .1 together on a
		// 2-CPU host; it showed 57.69%, 55.85%, 46.60%, 25.43%, 9.76%.
		{"cpus 2/1/.5/.25/.1 together on 2 CPUs", 2, []CPUDemand{one(2, 0), one(1, 0), one(0.5, 0), one(0.25, 0), one(0.1, 0)}, []float64{0.575, 0.575, 0.5, 0.25, 0.1}},
		// Seed 000: equal shares, whatever their value, share equally.
		{"three lanes at shares 4 on 2 CPUs", 2, []CPUDemand{one(0, 4), one(0, 4), one(0, 4)}, []float64{2.0 / 3, 2.0 / 3, 2.0 / 3}},
		// Shares act only when CPU is scarce.
		{"shares 4 alone", 2, []CPUDemand{one(0, 4)}, []float64{1}},
		{"shares 512 and 2048 on 2 CPUs", 2, []CPUDemand{one(0, 512), one(0, 2048)}, []float64{1, 1}},
		{"shares 512/1024/2048 spread over 2 CPUs", 2, []CPUDemand{one(0, 512), one(0, 1024), one(0, 2048)}, []float64{1.0 / 3, 2.0 / 3, 1}},
		// The --cpus ladder: one thread cannot use more than one CPU.
		{"one thread at cpus 2", 2, []CPUDemand{one(2, 0)}, []float64{1}},
		{"one thread at cpus .25", 2, []CPUDemand{one(0.25, 0)}, []float64{0.25}},
		{"quota as period and quota", 2, []CPUDemand{{Threads: 1, Quota: 50000.0 / 100000}}, []float64{0.5}},
		// Threads against --cpus.
		{"two threads at cpus 2", 2, []CPUDemand{{Threads: 2, Quota: 2}}, []float64{2}},
		{"two threads at cpus .5", 2, []CPUDemand{{Threads: 2, Quota: 0.5}}, []float64{0.5}},
		// Cpusets.
		{"one thread on cpuset 1", 2, []CPUDemand{one(0, 0, 1)}, []float64{1}},
		{"two threads on cpuset 0", 2, []CPUDemand{{Threads: 2, CPUs: []int{0}}}, []float64{1}},
		{"two threads on cpuset 0,1", 2, []CPUDemand{{Threads: 2, CPUs: []int{0, 1}}}, []float64{2}},
		{"pinned lane and a free one", 2, []CPUDemand{{Threads: 2, CPUs: []int{0}}, {Threads: 2}}, []float64{1, 1}},
		{"no CPU needed", 2, []CPUDemand{{Threads: 0}, one(0, 0)}, []float64{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Allot(tt.lanes, tt.ncpu)
			for i := range tt.want {
				if !near(got[i], tt.want[i]) {
					t.Fatalf("allot = %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestSimulate(t *testing.T) {
	free := CPUDemand{Threads: 1}
	quarter := CPUDemand{Threads: 1, Quota: 0.25}
	tests := []struct {
		name  string
		lanes []SimLane
		limit float64
		wall  []float64
		cores []float64
	}{
		{"work at a quarter CPU takes four times as long", []SimLane{{Work: 1, Demand: free}, {Work: 1, Demand: quarter}}, 0,
			[]float64{1, 4}, []float64{1, 0.25}},
		{"a lane ending frees CPU for the others", []SimLane{
			{Work: 2, Demand: CPUDemand{Threads: 1, CPUs: []int{0}}},
			{Seconds: 2, Demand: CPUDemand{Threads: 1, CPUs: []int{0}}}}, 0,
			// Half a CPU each for 2s, then the worker alone: 1 + 1 = 3s.
			[]float64{3, 2}, []float64{2.0 / 3, 0.5}},
		{"a live change from cpus 1 to .25 at 1s", []SimLane{{Work: 2, Demand: CPUDemand{Threads: 1, Quota: 1},
			Changes: []DemandChange{{At: 1, Demand: quarter}}}}, 0, []float64{5}, []float64{0.4}},
		{"the run's limit stops a lane", []SimLane{{Work: 100, Demand: free}}, 10, []float64{10}, []float64{1}},
		{"a late start", []SimLane{{Start: 3, Work: 1, Demand: free}}, 0, []float64{1}, []float64{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Simulate(tt.lanes, 2, tt.limit)
			for i := range tt.wall {
				if !near(res[i].Wall, tt.wall[i]) || !near(res[i].Cores, tt.cores[i]) {
					t.Fatalf("lane %d: %+v, want wall %g cores %g", i, res[i], tt.wall[i], tt.cores[i])
				}
			}
		})
	}
}

func TestSimulateStopAt(t *testing.T) {
	res := Simulate([]SimLane{{Start: 10, Seconds: 30, StopAt: 20, Demand: CPUDemand{Threads: 1}}}, 2, 40)
	if !near(res[0].Wall, 10) {
		t.Errorf("a lane stopped at 20s after starting at 10s: wall %g, want 10", res[0].Wall)
	}
}
