package experiments

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Verdict compares the ratios the model predicted with those measured.
type Verdict struct {
	// Judged is false when the run cannot be judged (a lane did not
	// finish, or the model does not apply); Explanation says why.
	Judged bool   `json:"judged"`
	Pass   bool   `json:"pass"`
	Metric string `json:"metric"`
	// Labels name the rows when they are not the run's lanes, one each.
	Labels      []string  `json:"labels,omitempty"`
	Predicted   []float64 `json:"predicted"`
	Measured    []float64 `json:"measured"`
	Tolerance   float64   `json:"tolerance"`
	Explanation string    `json:"explanation"`
}

// JudgedBy is the verdict a run of the plan is judged by: its lab's, or
// the default; nil if none.
func (p Plan) JudgedBy() *VerdictSpec {
	if p.Verdict != nil {
		return p.Verdict
	}
	return DefaultVerdict(p)
}

// DefaultVerdict is how a custom run is judged: by wall time when its
// lanes do the same kind of bounded work one after another, by CPU share
// when they are all CPU-bound; otherwise not at all.
func DefaultVerdict(plan Plan) *VerdictSpec {
	kind := plan.Lanes[0].Workload.Kind
	sameWork := true
	for _, l := range plan.Lanes {
		_, timeBound, ok := workUnits(l.Workload)
		if !ok {
			return nil
		}
		sameWork = sameWork && l.Workload.Kind == kind && !timeBound
	}
	if len(plan.Lanes) < 2 {
		return nil
	}
	if sameWork && plan.Mode == Sequential {
		return &VerdictSpec{Metric: MetricWallTime, Tolerance: 0.15}
	}
	return &VerdictSpec{Metric: MetricCPU, Tolerance: 0.15}
}

// Judge gives the verdict on a run: every lane's metric relative to the
// first lane's, predicted against measured, within the tolerance.
func Judge(spec VerdictSpec, plan Plan, pred Prediction, out []LaneOutcome) Verdict {
	v := Verdict{Metric: spec.Metric, Tolerance: spec.Tolerance}
	for i, l := range plan.Lanes {
		if !out[i].Completed {
			v.Explanation = fmt.Sprintf("Not judged: lane %d (%s) did not run to its end.", i+1, l.Name)
			return v
		}
		if !pred.Lanes[i].OK {
			v.Explanation = "Not judged: the model does not apply (" + pred.Why + ")."
			return v
		}
	}
	window := pred.Together != nil
	for _, o := range out {
		window = window && o.WindowCores > 0
	}
	value := func(i int) (p, m float64) {
		switch {
		case spec.Metric == MetricWallTime:
			// Wall time per unit of the CPU work the lane's spec asks for,
			// as measured: the same job's CPU time varies by several
			// percent from run to run on a shared virtual machine (cold
			// caches after throttling, a busy sibling hyperthread), which
			// is not what a limit does. Lanes of equal work compare wall
			// time per CPU second.
			units, _, _ := workUnits(plan.Lanes[i].Workload)
			return pred.Lanes[i].Wall, out[i].Wall / out[i].CPUSeconds * units
		case window:
			return pred.Together[i], out[i].WindowCores
		}
		return pred.Lanes[i].Cores, out[i].CPUSeconds / out[i].Wall
	}
	p0, m0 := value(0)
	if p0 <= 0 || m0 <= 0 {
		v.Explanation = fmt.Sprintf("Not judged: lane 1 (%s) has no %s to compare with.", plan.Lanes[0].Name, metricName(spec.Metric))
		return v
	}
	v.Judged, v.Pass = true, true
	worst, worstLane := 0.0, 0
	for i := range plan.Lanes {
		p, m := value(i)
		v.Predicted = append(v.Predicted, p/p0)
		v.Measured = append(v.Measured, m/m0)
		dev := math.Abs(m/m0/(p/p0) - 1)
		if dev > worst {
			worst, worstLane = dev, i
		}
		if dev > spec.Tolerance {
			v.Pass = false
		}
	}
	while := ""
	if spec.Metric == MetricCPU && window {
		while = ", while all lanes ran"
	}
	if spec.Metric == MetricWallTime {
		while = " (measured per CPU second of work)"
	}
	v.Explanation = fmt.Sprintf("The CPU allotment model predicts %s ratios of %s; measured %s%s. ",
		metricName(spec.Metric), ratios(v.Predicted), ratios(v.Measured), while)
	if v.Pass {
		v.Explanation += fmt.Sprintf("Every lane is within %s of its prediction (the farthest, lane %d, by %s).",
			percent(spec.Tolerance), worstLane+1, percent(worst))
	} else {
		v.Explanation += fmt.Sprintf("Lane %d (%s) is %s off its prediction, beyond the %s tolerance.",
			worstLane+1, plan.Lanes[worstLane].Name, percent(worst), percent(spec.Tolerance))
	}
	return v
}

func metricName(m string) string {
	if m == MetricWallTime {
		return "wall-time"
	}
	return "CPU"
}

func ratios(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strings.Join(parts, " : ")
}

func percent(x float64) string { return strconv.FormatFloat(100*x, 'f', 1, 64) + "%" }
