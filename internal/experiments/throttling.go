package experiments

import (
	"fmt"
	"math"
	"strconv"
)

// MetricThrottling judges services under a CPU quota by how often CFS
// throttles them: one that can run more threads at once than its quota
// allows burns the quota early in each period and is throttled in most of
// them; one that cannot is throttled in few (the GOMAXPROCS write-up, and
// automaxprocs' reason to be). The tolerance is absolute, on the share of
// periods throttled.
const MetricThrottling = "throttling"

// GoThreads is how many threads of an http workload run Go code at once:
// its GOMAXPROCS, as the workload sets it, and never more than the CPUs
// it may use. "auto" is the Go runtime's own choice since Go 1.25: the
// quota rounded up, at least 2, at most the CPUs.
func GoThreads(w Workload, quota float64, ncpu int) int {
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

// ThrottleOutcome is what CFS counted of a lane over its run.
type ThrottleOutcome struct {
	Completed          bool
	Periods, Throttled uint64
}

// JudgeThrottling gives the verdict of a lab judged by MetricThrottling:
// each http lane under a CPU quota is predicted to be throttled in most
// periods (1) when its Go threads exceed the quota, in few (0) when not.
func JudgeThrottling(spec VerdictSpec, plan Plan, out []ThrottleOutcome, ncpu int) Verdict {
	v := Verdict{Metric: spec.Metric, Tolerance: spec.Tolerance}
	worst := 0.0
	for i, l := range plan.Lanes {
		quota := l.Resources.CPULimit()
		if l.Workload.Kind != KindHTTP || quota <= 0 {
			continue
		}
		if !out[i].Completed || out[i].Periods == 0 {
			v.Explanation = fmt.Sprintf("Not judged: lane %d (%s) did not serve its load to the end under its quota.", i+1, l.Name)
			return v
		}
		threads := GoThreads(l.Workload, quota, ncpu)
		predicted := 0.0
		if float64(threads) > quota {
			predicted = 1
		}
		measured := float64(out[i].Throttled) / float64(out[i].Periods)
		v.Labels = append(v.Labels, fmt.Sprintf("%s (GOMAXPROCS %d, --cpus %s)", l.Name, threads, strconv.FormatFloat(quota, 'f', -1, 64)))
		v.Predicted = append(v.Predicted, predicted)
		v.Measured = append(v.Measured, measured)
		worst = max(worst, math.Abs(measured-predicted))
	}
	if len(v.Predicted) == 0 {
		v.Explanation = "Not judged: no http lane runs under a CPU quota."
		return v
	}
	v.Judged, v.Pass = true, worst <= spec.Tolerance
	v.Explanation = fmt.Sprintf("A service whose Go threads outnumber its quota is throttled in most periods (1), one that cannot exceed it in few (0): predicted %s, measured shares of periods throttled %s; the farthest is %.2f off, tolerance %.2f.",
		ratios(v.Predicted), ratios(v.Measured), worst, spec.Tolerance)
	return v
}
