package models

import (
	"fmt"
	"math"
	"strconv"

	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// GoThreads is how many threads of an http workload run Go code at once:
// its GOMAXPROCS, as the workload sets it, and never more than the CPUs
// it may use. "auto" is the Go runtime's own choice since Go 1.25: the
// quota rounded up, at least 2, at most the CPUs.
func GoThreads(w specs.Workload, quota float64, ncpu int) int {
	switch w.GOMAXPROCS {
	case "host":
		return ncpu
	case "", "auto":
		n := ncpu
		if quota > 0 {
			n = min(ncpu, max(2, int(math.Ceil(quota))))
		}
		return n
	}
	n, err := strconv.Atoi(string(w.GOMAXPROCS))
	if err != nil || n <= 0 {
		return ncpu
	}
	return min(n, ncpu)
}

// ThrottleOutcome is what CFS counted of a lane over its run, and how long
// it ran; for a service, what else used the CPUs meanwhile: its loads'
// CPU (Beside) and the host's other work (Foreign), in cores over its
// Wall.
type ThrottleOutcome struct {
	Completed          bool
	Periods, Throttled uint64
	ThrottledNs        uint64
	Wall               float64 // seconds
	Beside, Foreign    float64
}

// Parallelism is how many of a service's n threads run at once while it
// is not throttled, on cpus CPUs that its loads (beside cores on average
// over the whole run) and the host's other work (foreign cores) share:
// a closed load waits while its service is throttled, so its CPU falls in
// the service's unthrottled stretches, a share quota/p of the time. The
// CPUs left to the service then are cpus − foreign − beside·p/quota, and
// p = (cpus − foreign) / (1 + beside/quota), at most n.
func Parallelism(n int, quota float64, cpus int, beside, foreign float64) float64 {
	p := float64(n)
	if quota <= 0 || beside+foreign <= 0 {
		return p
	}
	return max(0, min(p, (float64(cpus)-foreign)/(1+beside/quota)))
}

// JudgeThrottling gives the verdict of a lab judged by MetricThrottling:
// each http lane under a CPU quota q is predicted to be throttled for
// 1 − q/p of its CPUs' time when the p of its Go threads that run at once
// (Parallelism: its n threads, on the CPUs its loads and the host's other
// work leave it) exceed q, for none of it when not.
func JudgeThrottling(spec specs.VerdictSpec, plan specs.Plan, out []ThrottleOutcome, ncpu int) Verdict {
	v := Verdict{Metric: spec.Metric, Tolerance: spec.Tolerance}
	worst := 0.0
	for i, l := range plan.Lanes {
		quota := l.Resources.CPULimit()
		// A pod with CPUs of its own (the static CPU manager) has its
		// limit without a quota: judged, and predicted never throttled.
		exclusive := l.Pod != nil && l.Pod.ExclusiveCPUs > 0
		if l.Workload.Kind != specs.KindHTTP || (quota <= 0 && !exclusive) {
			continue
		}
		if !out[i].Completed || (out[i].Periods == 0 && !exclusive) || out[i].Wall <= 0 {
			v.Explanation = fmt.Sprintf("Not judged: lane %d (%s) did not serve its load to the end under its quota.", i+1, l.Name)
			return v
		}
		// Go counts the CPUs its process may run on: a cpuset's.
		cpus := ncpu
		if set, err := specs.ParseCPUSet(l.Resources.CpusetCpus); err == nil {
			cpus = len(set)
		}
		threads := GoThreads(l.Workload, quota, cpus)
		predicted := 0.0
		if p := Parallelism(threads, quota, cpus, out[i].Beside, out[i].Foreign); quota > 0 && p > quota {
			predicted = 1 - quota/p
		}
		measured := float64(out[i].ThrottledNs) / 1e9 / (float64(threads) * out[i].Wall)
		limit := "--cpus " + strconv.FormatFloat(quota, 'f', -1, 64)
		switch {
		case exclusive:
			limit = fmt.Sprintf("limits.cpu %d, CPUs of its own, no quota", l.Pod.ExclusiveCPUs)
		case l.Pod != nil:
			limit = "limits.cpu " + strconv.FormatFloat(quota, 'f', -1, 64)
		}
		v.Labels = append(v.Labels, fmt.Sprintf("%s (GOMAXPROCS %d, %s)", l.Name, threads, limit))
		v.Predicted = append(v.Predicted, predicted)
		v.Measured = append(v.Measured, measured)
		worst = max(worst, math.Abs(measured-predicted))
	}
	if len(v.Predicted) == 0 {
		v.Explanation = "Not judged: no http lane runs under a CPU quota."
		return v
	}
	v.Judged, v.Pass = true, worst <= spec.Tolerance
	v.Explanation = fmt.Sprintf("A service whose Go threads outnumber its quota is throttled for the rest of each period once its threads have burnt the quota, one that cannot exceed it hardly at all (0). Its threads burn it as fast as they run at once: on the CPUs its load and the host's other work, as measured, leave them while it is not throttled (1 − quota/threads running of its CPUs' time): predicted %s, measured shares of time throttled %s; the farthest is %.2f off, tolerance %.2f.",
		ratios(v.Predicted), ratios(v.Measured), worst, spec.Tolerance)
	return v
}
