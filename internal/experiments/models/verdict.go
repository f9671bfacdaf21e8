package models

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/limitlab/limitlab/internal/experiments/specs"
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
	// Inconclusive says the host's own load could have decided the
	// verdict (JudgeNoise); Noise says what was busy and how much.
	Inconclusive bool   `json:"inconclusive,omitempty"`
	Noise        string `json:"noise,omitempty"`
	// Held, on an inconclusive verdict, says the measurements were within
	// the tolerance all the same: the host's load could have decided the
	// verdict, and did not move it past the prediction.
	Held bool `json:"held,omitempty"`
	// Runtimes are a runtimes lab's cells, each runtime's figure in each
	// lane beside its rule's prediction.
	Runtimes []RuntimeCell `json:"runtimes,omitempty"`
}

// JudgedBy is the verdict a run of the plan is judged by: its lab's, or
// the default; nil if none.
func JudgedBy(p specs.Plan) *specs.VerdictSpec {
	if p.Verdict != nil {
		return p.Verdict
	}
	return DefaultVerdict(p)
}

// DefaultVerdict is how a custom run is judged: by wall time when its
// lanes do the same kind of bounded work one after another, by CPU share
// when they are all CPU-bound; otherwise not at all.
func DefaultVerdict(plan specs.Plan) *specs.VerdictSpec {
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
	if sameWork && plan.Mode == specs.Sequential {
		return &specs.VerdictSpec{Metric: specs.MetricWallTime, Tolerance: 0.15}
	}
	return &specs.VerdictSpec{Metric: specs.MetricCPU, Tolerance: 0.15}
}

// StarvedRatio is the smallest ratio a verdict compares relatively. A lane
// the model gives less than this share of the first lane's (a BestEffort
// pod beside pods with requests, 2 shares against 512 and 1024) is
// predicted starved, no more: the kernel's scheduler gives so small a
// weight several times its share (a 2-share lane beside 512 shares got
// 2.6% to 4.5% of the first lane's CPU here, where its weight gives 0.4%),
// so it is judged by how far it got beyond StarvedRatio, on that scale.
const StarvedRatio = 0.05

// ratioDeviation is how far a measured ratio is from its prediction,
// relative to the prediction; for a lane predicted starved, how far it got
// beyond StarvedRatio, relative to that.
func ratioDeviation(measured, predicted float64) float64 {
	if predicted < StarvedRatio {
		return math.Max(0, measured-StarvedRatio) / StarvedRatio
	}
	return math.Abs(measured-predicted) / predicted
}

// Judge gives the verdict on a run: every lane's metric relative to the
// first lane's, predicted against measured, within the tolerance.
func Judge(spec specs.VerdictSpec, plan specs.Plan, pred Prediction, out []LaneOutcome) Verdict {
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
		case spec.Metric == specs.MetricWallTime:
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
		dev := ratioDeviation(m/m0, p/p0)
		if dev > worst {
			worst, worstLane = dev, i
		}
		if dev > spec.Tolerance {
			v.Pass = false
		}
	}
	while := ""
	if spec.Metric == specs.MetricCPU && window {
		while = ", while all lanes ran"
	}
	if spec.Metric == specs.MetricWallTime {
		while = " (measured per CPU second of work)"
	}
	v.Explanation = fmt.Sprintf("The CPU allotment model predicts %s ratios of %s; measured %s%s. ",
		metricName(spec.Metric), ratios(v.Predicted), ratios(v.Measured), while)
	if v.Pass {
		v.Explanation += fmt.Sprintf("Every lane is within %s of its prediction (the farthest, lane %d, by %s).",
			specs.Percent(spec.Tolerance), worstLane+1, specs.Percent(worst))
	} else {
		v.Explanation += fmt.Sprintf("Lane %d (%s) is %s off its prediction, beyond the %s tolerance.",
			worstLane+1, plan.Lanes[worstLane].Name, specs.Percent(worst), specs.Percent(spec.Tolerance))
	}
	return v
}

func metricName(m string) string {
	if m == specs.MetricWallTime {
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

// NoiseEffect is the share of its CPU each of the lanes that ran together
// in a window kept under a foreign load of foreign cores (other work on
// the host, and the hypervisor's steal). The foreign cores were measured
// taken, so the model allots the CPUs to the lanes alone, and again with
// what is left once a competitor has its foreign cores first: 1 for a
// lane that lost nothing (a host with CPU to spare), less for one that
// lost some.
func NoiseEffect(lanes []CPUDemand, ncpu int, foreign float64) []float64 {
	kept := make([]float64, len(lanes))
	for i := range kept {
		kept[i] = 1
	}
	if foreign <= 0 || len(lanes) == 0 {
		return kept
	}
	alone := Allot(lanes, ncpu)
	// A weight no lane's shares come near: it is served first.
	taken := CPUDemand{Threads: foreign, Quota: foreign, Shares: 1 << 40}
	with := Allot(append(append([]CPUDemand{}, lanes...), taken), ncpu)
	for i, a := range alone {
		if a > 0 {
			kept[i] = with[i] / a
		}
	}
	return kept
}

// PhaseShares is a lane's CPU in each phase relative to its first, as the
// model allots the host's CPUs among the lanes running in each: rows name
// them, and the lane among them (as for JudgeNoise).
func PhaseShares(rows []NoisyRow, ncpu int) []float64 {
	if len(rows) == 0 {
		return nil
	}
	share := func(r NoisyRow) float64 { return Allot(r.Lanes, ncpu)[r.Lane] }
	first := share(rows[0])
	if first <= 0 {
		return nil
	}
	out := make([]float64, len(rows))
	for i, r := range rows {
		out[i] = share(r) / first
	}
	return out
}

// NoisyRow is one row a verdict judged: the lanes that ran together in
// its window, the one among them the row measures, and the host's load
// there (means, in cores).
type NoisyRow struct {
	Name           string // "the window every lane ran in", "phase 2", a lane's name
	Lanes          []CPUDemand
	Lane           int
	Foreign, Steal float64
}

// JudgeNoise makes a verdict inconclusive where the host's load could
// have moved its metric past the tolerance: each row's figure is taken
// relative to the first row's, so the load moves a row's ratio by the
// share of CPU its lane kept against the share the first row's kept (the
// inverse for wall time). It names the row, what was busy and how much.
// A verdict not judged, or whose metric is not CPU time, is left as it is.
func JudgeNoise(v Verdict, ncpu int, rows []NoisyRow) Verdict {
	if !v.Judged || len(rows) == 0 || (v.Metric != specs.MetricCPU && v.Metric != specs.MetricWallTime && v.Metric != specs.MetricPhaseRecovery) {
		return v
	}
	kept := make([]float64, len(rows))
	for i, r := range rows {
		kept[i] = NoiseEffect(r.Lanes, ncpu, r.Foreign+r.Steal)[r.Lane]
	}
	worst, at := 0.0, -1
	for i := range rows {
		moved := math.Inf(1)
		if kept[i] > 0 && kept[0] > 0 {
			moved = kept[i] / kept[0]
			if v.Metric == specs.MetricWallTime {
				moved = kept[0] / kept[i]
			}
			moved = math.Abs(moved - 1)
		}
		if moved > worst {
			worst, at = moved, i
		}
	}
	if at < 0 || worst <= v.Tolerance {
		return v
	}
	busiest := 0
	for i, r := range rows {
		if r.Foreign+r.Steal > rows[busiest].Foreign+rows[busiest].Steal {
			busiest = i
		}
	}
	b := rows[busiest]
	counted, within := noiseBand(v, kept)
	v.Inconclusive, v.Held, v.Pass = true, v.Pass || within, false
	v.Noise = fmt.Sprintf("the host was too busy to judge: %.2f cores of other work than this run and %.2f of steal in %s could have moved the figure of %s by %s, more than the tolerance of %s",
		b.Foreign, b.Steal, b.Name, rows[at].Name, specs.Percent(min(worst, 9.99)), specs.Percent(v.Tolerance))
	v.Explanation = "inconclusive: " + v.Noise + ". What was measured: " + v.Explanation
	if counted != nil {
		v.Explanation += fmt.Sprintf(" With that other work served first, the model predicts %s", ratios(counted))
		if within {
			v.Explanation += fmt.Sprintf(": every figure is within %s of the range between the two predictions.", specs.Percent(v.Tolerance))
		} else {
			v.Explanation += fmt.Sprintf(": a figure lies more than %s outside the range between the two predictions.", specs.Percent(v.Tolerance))
		}
	}
	return v
}

// noiseBand is the prediction with the host's other work served before
// the lanes (counted, a row's prediction scaled by the share of CPU it
// kept against the first row's), and whether every measured figure lies
// within the tolerance of the range between that and the plain
// prediction: the other work took somewhere between nothing of a lane and
// first turn on every CPU it used. Nil for a metric the model does not
// scale this way.
func noiseBand(v Verdict, kept []float64) (counted []float64, within bool) {
	if v.Metric != specs.MetricCPU && v.Metric != specs.MetricWallTime || len(kept) != len(v.Predicted) || len(v.Measured) != len(v.Predicted) || kept[0] <= 0 {
		return nil, false
	}
	within = true
	for i, p := range v.Predicted {
		c := p * kept[i] / kept[0]
		if v.Metric == specs.MetricWallTime {
			c = math.Inf(1)
			if kept[i] > 0 {
				c = p * kept[0] / kept[i]
			}
		}
		counted = append(counted, c)
		near := math.Min(math.Max(v.Measured[i], math.Min(p, c)), math.Max(p, c))
		if ratioDeviation(v.Measured[i], near) > v.Tolerance {
			within = false
		}
	}
	return counted, within
}
