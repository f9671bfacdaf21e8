package models

import (
	"math"
	"math/bits"
	"sort"

	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// The CPU allotment model predicts how many cores each lane gets from its
// spec alone. CFS gives each runnable group CPU in proportion to its weight
// (cpu.shares on cgroup v1, cpu.weight on v2), within what its threads can
// use, its CFS quota and the CPUs of its cpuset
// (https://docs.kernel.org/scheduler/sched-design-CFS.html,
// https://docs.kernel.org/scheduler/sched-bwc.html). The idealised result is
// the weighted max-min fair allotment, found by progressive filling
// ("water-filling"): every lane's rate grows with its weight until it meets
// its own cap or a set of CPUs it is confined to is full.

// CPUDemand is a lane as the model sees it.
type CPUDemand struct {
	Threads float64 // runnable threads (0 for a lane that needs no CPU)
	Quota   float64 // CFS quota in cores; 0 is none
	CPUs    []int   // the cpuset; empty is every CPU
	Shares  float64 // cpu-shares; 0 is the default 1024
}

// Demand is how the model sees a lane's workload under its limits.
func Demand(w specs.Workload, r specs.Resources) CPUDemand {
	d := CPUDemand{Quota: r.CPULimit(), Shares: float64(r.CPUShares)}
	switch w.Kind {
	case specs.KindMD5:
		d.Threads = 1
	case specs.KindPrimes, specs.KindSpin:
		d.Threads = float64(w.Threads)
	}
	if r.CpusetCpus != "" {
		d.CPUs, _ = specs.ParseCPUSet(r.CpusetCpus)
	}
	return d
}

// cpuMask is a set of CPUs; Limit Lab models hosts of up to 64 CPUs exactly
// and folds larger ones onto that.
type cpuMask uint64

func maskOf(cpus []int, ncpu int) cpuMask {
	n := min(ncpu, 64)
	if len(cpus) == 0 {
		if n == 64 {
			return ^cpuMask(0)
		}
		return cpuMask(1)<<n - 1
	}
	var m cpuMask
	for _, c := range cpus {
		if c < n {
			m |= 1 << c
		}
	}
	return m
}

func (m cpuMask) size() float64 { return float64(bits.OnesCount64(uint64(m))) }

// Allot returns each lane's cores when the lanes run together on a host of
// ncpu CPUs.
func Allot(lanes []CPUDemand, ncpu int) []float64 {
	n := len(lanes)
	rate := make([]float64, n)
	capOf := make([]float64, n)
	weight := make([]float64, n)
	mask := make([]cpuMask, n)
	active := make([]bool, n)
	for i, l := range lanes {
		mask[i] = maskOf(l.CPUs, ncpu)
		capOf[i] = min(l.Threads, mask[i].size())
		if l.Quota > 0 {
			capOf[i] = min(capOf[i], l.Quota)
		}
		weight[i] = l.Shares
		if weight[i] <= 0 {
			weight[i] = specs.DefaultShares
		}
		active[i] = capOf[i] > 0
	}
	// The sets of CPUs that can fill up are the unions of the lanes'
	// cpusets.
	distinct := map[cpuMask]bool{}
	for i := range lanes {
		distinct[mask[i]] = true
	}
	var bases []cpuMask
	for m := range distinct {
		bases = append(bases, m)
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	unions := map[cpuMask]bool{}
	for _, b := range bases {
		for u := range unions {
			unions[u|b] = true
		}
		unions[b] = true
	}
	const eps = 1e-12
	for {
		step := math.Inf(1)
		for i := range lanes {
			if active[i] {
				step = min(step, (capOf[i]-rate[i])/weight[i])
			}
		}
		for s := range unions {
			used, w := 0.0, 0.0
			for i := range lanes {
				if mask[i]&^s == 0 {
					used += rate[i]
					if active[i] {
						w += weight[i]
					}
				}
			}
			if w > 0 {
				step = min(step, (s.size()-used)/w)
			}
		}
		if math.IsInf(step, 1) {
			return rate
		}
		step = max(step, 0)
		for i := range lanes {
			if active[i] {
				rate[i] += weight[i] * step
			}
		}
		for i := range lanes {
			if active[i] && rate[i] >= capOf[i]-eps {
				active[i] = false
			}
		}
		for s := range unions {
			used := 0.0
			for i := range lanes {
				if mask[i]&^s == 0 {
					used += rate[i]
				}
			}
			if used >= s.size()-eps {
				for i := range lanes {
					if mask[i]&^s == 0 {
						active[i] = false
					}
				}
			}
		}
	}
}

// SimLane is a lane for the simulation of a run over time.
type SimLane struct {
	Start float64 // seconds after the run started
	// Work is the CPU time the lane needs, in seconds; zero for a lane
	// that runs for a set time instead (Seconds).
	Work    float64
	Seconds float64
	// StopAt ends the lane at this time after the run's start (0: none).
	StopAt float64
	// Demand holds from Start; Changes replace it from their time on.
	Demand  CPUDemand
	Changes []DemandChange
}

// DemandChange is a live limit change as the model sees it.
type DemandChange struct {
	At     float64 // seconds after the run started
	Demand CPUDemand
}

// SimResult is what the simulation predicts for a lane.
type SimResult struct {
	Wall       float64 // seconds from the lane's start to its end
	CPUSeconds float64
	Cores      float64 // mean cores over its life
}

// Simulate plays the lanes forward in time: at every moment the running
// lanes share the host by Allot, a work-bound lane ends when it has had its
// CPU time, a time-bound one after its seconds, and every lane at the
// run's limit (0: none).
func Simulate(lanes []SimLane, ncpu int, limit float64) []SimResult {
	n := len(lanes)
	res := make([]SimResult, n)
	remaining := make([]float64, n)
	done := make([]bool, n)
	for i, l := range lanes {
		remaining[i] = l.Work
	}
	now := 0.0
	// demand is lane i's demand now: the latest change in force, if any
	// (changes are in time order).
	demand := func(i int) CPUDemand {
		d := lanes[i].Demand
		for _, c := range lanes[i].Changes {
			if c.At <= now+1e-12 {
				d = c.Demand
			}
		}
		return d
	}
	end := func(i int) float64 { // the time-bound end of lane i
		e := math.Inf(1)
		if lanes[i].Work == 0 {
			e = lanes[i].Start + lanes[i].Seconds
		}
		if limit > 0 {
			e = min(e, lanes[i].Start+limit)
		}
		if lanes[i].StopAt > 0 {
			e = min(e, lanes[i].StopAt)
		}
		return e
	}
	for steps := 0; steps < 10000; steps++ {
		var running []int
		next := math.Inf(1)
		for i, l := range lanes {
			if done[i] {
				continue
			}
			if l.Start > now {
				next = min(next, l.Start)
				continue
			}
			running = append(running, i)
			next = min(next, end(i))
			for _, c := range l.Changes {
				if c.At > now {
					next = min(next, c.At)
				}
			}
		}
		if len(running) == 0 && math.IsInf(next, 1) {
			break
		}
		ds := make([]CPUDemand, len(running))
		for k, i := range running {
			ds[k] = demand(i)
		}
		cores := Allot(ds, ncpu)
		for k, i := range running {
			if lanes[i].Work > 0 && cores[k] > 0 {
				next = min(next, now+remaining[i]/cores[k])
			}
		}
		if math.IsInf(next, 1) {
			// Work-bound lanes that get no CPU never end: stop here.
			for _, i := range running {
				res[i].Wall = math.Inf(1)
			}
			break
		}
		dt := next - now
		for k, i := range running {
			res[i].CPUSeconds += cores[k] * dt
			if lanes[i].Work > 0 {
				remaining[i] -= cores[k] * dt
			}
		}
		now = next
		for _, i := range running {
			if (lanes[i].Work > 0 && remaining[i] <= 1e-9) || now >= end(i)-1e-12 {
				done[i] = true
				res[i].Wall = now - lanes[i].Start
			}
		}
	}
	for i := range res {
		if res[i].Wall > 0 && !math.IsInf(res[i].Wall, 1) {
			res[i].Cores = res[i].CPUSeconds / res[i].Wall
		}
	}
	return res
}
