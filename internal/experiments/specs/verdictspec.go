package specs

import "strconv"

// VerdictSpec says which metric a lab's verdict compares and how closely
// the measured ratios must match the predicted ones.
type VerdictSpec struct {
	Metric    string  `json:"metric"`    // MetricWallTime or MetricCPU
	Tolerance float64 `json:"tolerance"` // relative, e.g. 0.1 for 10%
	// ToleranceWhy is the lab's reason for a tolerance wider than what
	// its model predicts within on a quiet host, which the verdict gives.
	ToleranceWhy string `json:"tolerance_why,omitempty"`
}

// Verdict metrics: each lane's value is taken relative to the first lane's.
const (
	MetricWallTime = "wall_time"
	MetricCPU      = "cpu"
)

// Needs are the sampled signals a verdict of this metric judges on (by the
// names internal/engine gives them): the CPU metric compares the lanes'
// sampled cores; the others use the workloads' own accounts.
func (v VerdictSpec) Needs() []string {
	switch v.Metric {
	case MetricCPU:
		return []string{"cpu"}
	case MetricIOShare:
		return []string{"io_bytes"}
	case MetricThrottling, MetricBurst:
		return []string{"throttling"}
	}
	return nil
}

// MetricBurst judges Go services under a CPU quota that a bursty load
// meets: how many CFS periods each burst of requests is throttled in, and
// the load's p99, both from a simulation of CFS bandwidth control with the
// lane's quota, period and burst (cpu.cfs_burst_us, cpu.max.burst)
// against the load's bursts (PredictBursts). Each row is judged relative to
// its prediction; a prediction of no throttling on the StarvedRatio scale.
const MetricBurst = "burst"

// Block IO verdicts: a throttled lane should run at its limit, and a victim
// should recover once its neighbours are throttled.
const (
	MetricIOLimit       = "io_limit"
	MetricPhaseRecovery = "phase_recovery"
	// MetricIOShare: lanes that compete for a disk share it in proportion
	// to their block IO weights while all of them run.
	MetricIOShare = "io_share"
)

// MetricThrottling judges services under a CPU quota by how long CFS
// throttles them: one that runs n threads at once under a quota of q CPUs
// (n > q) burns the quota in q/n of each period and is throttled for the
// rest of it on each of its n CPUs, 1 − q/n of its CPUs' time; one that
// cannot exceed its quota is hardly throttled at all (the GOMAXPROCS
// write-up, and automaxprocs' reason to be). The kernel's throttled time is
// summed over the CPUs the group was throttled on. The tolerance is
// absolute, on that share of time. (The share of periods throttled is no
// measure of it: a service held to its quota that overruns it by a
// microsecond in most periods counts as throttled in most of them.)
const MetricThrottling = "throttling"

// MetricRuntimes judges a runtimes lab: every figure each runtime
// reported against what its documented rule predicts for the limits in
// force.
const MetricRuntimes = "runtimes"

func Percent(x float64) string { return strconv.FormatFloat(100*x, 'f', 1, 64) + "%" }
