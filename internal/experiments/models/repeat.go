package models

import (
	"fmt"
	"math"
	"slices"

	"github.com/limitlab/limitlab/internal/experiments/specs"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// RoundPlan is the plan of a series' k-th run (from 0): in a sequential
// run every other round takes its groups in the reverse order, so that a
// lane's place in the sequence (a cold cache, a warm host) does not pass
// for its limits' effect. The lanes and their indexes stay as they are.
func RoundPlan(plan specs.Plan, k int) specs.Plan {
	if plan.Mode != specs.Sequential || k%2 == 0 {
		return plan
	}
	p := plan
	p.Groups = slices.Clone(plan.Groups)
	slices.Reverse(p.Groups)
	return p
}

// Stats summarise one quantity over a series' runs.
type Stats struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"` // sample standard deviation; 0 for one value
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
}

// Summarize is xs' count, mean, sample standard deviation and range.
func Summarize(xs []float64) Stats {
	if len(xs) == 0 {
		return Stats{}
	}
	s := Stats{N: len(xs), Mean: stat.Mean(xs, nil), Min: slices.Min(xs), Max: slices.Max(xs)}
	if len(xs) > 1 {
		s.SD = stat.StdDev(xs, nil)
	}
	return s
}

// Welch is Welch's unequal-variances t-test of two samples: the t
// statistic, its Welch–Satterthwaite degrees of freedom and the two-sided
// p-value. ok is false when it cannot be computed: fewer than two values
// on a side, or no variance on either.
func Welch(a, b []float64) (t, df, p float64, ok bool) {
	if len(a) < 2 || len(b) < 2 {
		return 0, 0, 0, false
	}
	ma, va := stat.MeanVariance(a, nil)
	mb, vb := stat.MeanVariance(b, nil)
	na, nb := float64(len(a)), float64(len(b))
	sa, sb := va/na, vb/nb
	if sa+sb == 0 {
		return 0, 0, 0, false
	}
	t = (ma - mb) / math.Sqrt(sa+sb)
	df = (sa + sb) * (sa + sb) / (sa*sa/(na-1) + sb*sb/(nb-1))
	p = 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.CDF(-math.Abs(t))
	return t, df, p, true
}

// Significance is the p-value under which two lanes are said to differ
// beyond the noise.
const Significance = 0.05

// SeriesLane is one lane's quantity in each of a series' runs.
type SeriesLane struct {
	Name   string    `json:"name"`
	Values []float64 `json:"values"`
	Stats  Stats     `json:"stats"`
}

// Comparison is a lane set against the series' first lane.
type Comparison struct {
	Lane     string  `json:"lane"`
	Against  string  `json:"against"`
	Ratio    float64 `json:"ratio"` // of the means
	T        float64 `json:"t"`
	DF       float64 `json:"df"`
	P        float64 `json:"p"`
	Computed bool    `json:"computed"` // false: too few runs, or no noise at all
	Differ   bool    `json:"differ"`   // beyond the noise: P < Significance
	Text     string  `json:"text"`
}

// Compare sets every lane against the first, with Welch's t-test.
func Compare(lanes []SeriesLane, unit string) []Comparison {
	out := []Comparison{} // [] on the wire, never null
	if len(lanes) < 2 {
		return out
	}
	base := lanes[0]
	for _, l := range lanes[1:] {
		c := Comparison{Lane: l.Name, Against: base.Name}
		if base.Stats.Mean != 0 {
			c.Ratio = l.Stats.Mean / base.Stats.Mean
		}
		c.T, c.DF, c.P, c.Computed = Welch(l.Values, base.Values)
		switch {
		case !c.Computed:
			c.Text = fmt.Sprintf("%s against %s: not tested (it needs at least two runs of each, with some spread)", l.Name, base.Name)
		case c.P < Significance:
			c.Differ = true
			c.Text = fmt.Sprintf("%s differs from %s beyond the noise: %.3g against %.3g %s (×%.2f), Welch's t = %.2f, df = %.1f, p = %.2g",
				l.Name, base.Name, l.Stats.Mean, base.Stats.Mean, unit, c.Ratio, c.T, c.DF, c.P)
		default:
			c.Text = fmt.Sprintf("%s and %s do not differ beyond the noise: %.3g against %.3g %s, Welch's t = %.2f, df = %.1f, p = %.2g",
				l.Name, base.Name, l.Stats.Mean, base.Stats.Mean, unit, c.T, c.DF, c.P)
		}
		out = append(out, c)
	}
	return out
}

// JudgeRepeats judges a lab over a series: the measured values averaged
// over the runs that were judged, held against the prediction as the
// metric holds one run's (relatively; throttled shares absolutely; the
// phase recovery on its last phase). Runs whose verdicts were
// inconclusive (the host's load could have decided them) are left out
// and counted in the explanation; when every judged run was, so is the
// series' verdict.
func JudgeRepeats(vs []*Verdict) *Verdict {
	var judged, noisy []*Verdict
	for _, v := range vs {
		switch {
		case v == nil || !v.Judged:
		case v.Inconclusive:
			noisy = append(noisy, v)
		default:
			judged = append(judged, v)
		}
	}
	if len(judged) == 0 {
		if len(noisy) == 0 {
			return nil
		}
		first := noisy[0]
		return &Verdict{Judged: true, Inconclusive: true, Metric: first.Metric, Labels: first.Labels, Predicted: first.Predicted,
			Measured: []float64{}, Tolerance: first.Tolerance, Noise: first.Noise,
			Explanation: fmt.Sprintf("Each of the %d runs judged was inconclusive: the host was too busy to judge any. Run the series again when it is quieter.", len(noisy))}
	}
	first := judged[0]
	out := &Verdict{Judged: true, Pass: true, Metric: first.Metric, Labels: first.Labels, Predicted: first.Predicted, Tolerance: first.Tolerance}
	out.Measured = make([]float64, len(first.Measured))
	for _, v := range judged {
		if len(v.Measured) != len(out.Measured) {
			return nil
		}
		for i, m := range v.Measured {
			out.Measured[i] += m / float64(len(judged))
		}
	}
	worst := 0.0
	for i, p := range out.Predicted {
		var dev float64
		switch {
		case out.Metric == specs.MetricThrottling:
			dev = math.Abs(out.Measured[i] - p)
		case out.Metric == specs.MetricBurst:
			dev = ratioDeviation(out.Measured[i], p)
		case p == 0: // not predicted (a disk's middle phase)
			continue
		default:
			dev = math.Abs(out.Measured[i]/p - 1)
		}
		worst = max(worst, dev)
	}
	out.Pass = worst <= out.Tolerance
	passed := 0
	for _, v := range judged {
		if v.Pass {
			passed++
		}
	}
	out.Explanation = fmt.Sprintf("Over %d runs: predicted %s, mean measured %s; the farthest is %.3g off, tolerance %s. Each run alone passed in %d of %d.",
		len(judged), ratios(out.Predicted), ratios(out.Measured), worst, specs.Percent(out.Tolerance), passed, len(judged))
	if len(noisy) > 0 {
		out.Explanation += fmt.Sprintf(" Judged over the quiet runs only: %d more, whose verdicts the host's own load could have decided, are left out.", len(noisy))
	}
	return out
}
