package finder

import (
	"errors"
	"fmt"
	"math"

	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// A limit search ("find the limit", issue 27): the smallest limit, on a
// grid from Min to Max in steps of Resolution, at which a service meets
// its target, found by bisection with real runs. This file is the search's
// arithmetic only: which limit to try next, when a limit's runs have
// decided it, and what the answer is. The runs are the workshop's.

// FindTarget is what a service must meet under a limit: its p99 latency
// below P99Ms, its failed requests below ErrorsPct percent, and, if
// Throttled is set, its share of CPU time throttled at most Throttled.
type FindTarget struct {
	P99Ms     float64 `json:"p99_ms"`
	ErrorsPct float64 `json:"errors_pct,omitempty"`
	Throttled float64 `json:"throttled,omitempty"`
}

// ProbeRun is one run's outcome at a limit.
type ProbeRun struct {
	Run       string  `json:"run"`
	P99Ms     float64 `json:"p99_ms"`
	ErrorsPct float64 `json:"errors_pct"`
	Throttled float64 `json:"throttled"`
	// Died says why the service did not serve its load under the limit
	// (OOM killed, exited): the limit misses the target, however its
	// other figures read.
	Died string `json:"died,omitempty"`
}

// Meets says whether a run met the target.
func (t FindTarget) Meets(r ProbeRun) bool {
	return r.Died == "" && r.P99Ms < t.P99Ms && (t.ErrorsPct == 0 || r.ErrorsPct < t.ErrorsPct) && (t.Throttled == 0 || r.Throttled <= t.Throttled)
}

// Check says what is wrong with a target, naming the field.
func (t FindTarget) Check() specs.Errors {
	var errs specs.Errors
	bad := func(field, msg string) {
		errs = append(errs, specs.FieldError{Lane: -1, Field: "target." + field, Message: msg})
	}
	if !(t.P99Ms > 0 && t.P99Ms <= 60000) {
		bad("p99_ms", "want a p99 in milliseconds, above 0 and at most 60000")
	}
	if t.ErrorsPct < 0 || t.ErrorsPct > 100 {
		bad("errors_pct", "want a share of failed requests in percent, from 0 to 100")
	}
	if t.Throttled < 0 || t.Throttled > 1 {
		bad("throttled", "want a share of CPU time throttled, from 0 to 1")
	}
	return errs
}

// ClearMargin is how far from the target's p99, relatively, one run's p99
// decides its limit alone; nearer, the limit runs again.
const ClearMargin = 0.25

// Bisection is a search's state: every run at every step of the grid so
// far. Step i is the limit Min + i·Resolution; the last step is Max.
type Bisection struct {
	Min, Max, Resolution float64
	// Repeats is the most runs one limit gets before the mean of its
	// p99s decides it.
	Repeats int
	Target  FindTarget
	runs    map[int][]ProbeRun
}

// repeatsWrong says what is wrong with a search's runs a limit, if
// anything.
func repeatsWrong(repeats int) string {
	if repeats < 1 || repeats > specs.MaxRepeat {
		return fmt.Sprintf("want repeats from 1 to %d runs a limit", specs.MaxRepeat)
	}
	return ""
}

// NewBisection checks a search's bounds and makes its state.
func NewBisection(min, max, resolution float64, repeats int, target FindTarget) (*Bisection, error) {
	switch {
	case !(min > 0) || !(max > min):
		return nil, errors.New("want 0 < min < max")
	case !(resolution > 0) || resolution > max-min:
		return nil, errors.New("want a resolution above 0 and at most max - min")
	case (max-min)/resolution > 1000:
		return nil, errors.New("more than 1000 steps between min and max: take a coarser resolution")
	case repeatsWrong(repeats) != "":
		return nil, errors.New(repeatsWrong(repeats))
	}
	return &Bisection{Min: min, Max: max, Resolution: resolution, Repeats: repeats, Target: target, runs: map[int][]ProbeRun{}}, nil
}

// last is the grid's last step, Max.
func (b *Bisection) last() int { return int(math.Ceil((b.Max-b.Min)/b.Resolution - 1e-9)) }

// Limits is how many limits the grid has: what a sweep of each once runs.
func (b *Bisection) Limits() int { return b.last() + 1 }

// Limit is step i's limit, to a millionth (0.9, not 0.9000000000000001:
// the docker CLI takes six decimals); the last step is Max itself.
func (b *Bisection) Limit(i int) float64 {
	if i >= b.last() {
		return b.Max
	}
	return math.Round((b.Min+float64(i)*b.Resolution)*1e6) / 1e6
}

// Record adds a run's outcome at step i.
func (b *Bisection) Record(i int, r ProbeRun) { b.runs[i] = append(b.runs[i], r) }

// Runs are step i's runs so far.
func (b *Bisection) Runs(i int) []ProbeRun { return b.runs[i] }

// decided says whether step i's runs have decided it, and whether it
// passes: one run whose p99 is clearly away from the target's (or that
// failed on errors or throttling alone), runs whose p99s differ from the
// target beyond the noise (a one-sample t-test), or Repeats runs, judged
// by their mean.
func (b *Bisection) decided(i int) (done, pass bool) {
	rs := b.runs[i]
	if len(rs) == 0 {
		return false, false
	}
	p99s := make([]float64, len(rs))
	meets := 0
	for k, r := range rs {
		if r.Died != "" {
			return true, false // a service that died there needs no repeat
		}
		p99s[k] = r.P99Ms
		if b.Target.Meets(r) {
			meets++
		}
	}
	mean := stat.Mean(p99s, nil)
	byMean := b.Target.Meets(ProbeRun{P99Ms: mean, ErrorsPct: meanOf(rs, func(r ProbeRun) float64 { return r.ErrorsPct }),
		Throttled: meanOf(rs, func(r ProbeRun) float64 { return r.Throttled })})
	if len(rs) >= b.Repeats {
		return true, byMean
	}
	if len(rs) == 1 {
		clear := math.Abs(mean-b.Target.P99Ms) > ClearMargin*b.Target.P99Ms
		failedOtherwise := rs[0].P99Ms < b.Target.P99Ms && meets == 0
		return clear || failedOtherwise, byMean
	}
	return differs(p99s, b.Target.P99Ms), byMean
}

func meanOf(rs []ProbeRun, f func(ProbeRun) float64) float64 {
	s := 0.0
	for _, r := range rs {
		s += f(r)
	}
	return s / float64(len(rs))
}

// differs is a one-sample t-test: whether xs' mean differs from v beyond
// the noise (p < Significance).
func differs(xs []float64, v float64) bool {
	mean, variance := stat.MeanVariance(xs, nil)
	if variance == 0 {
		return mean != v
	}
	n := float64(len(xs))
	t := (mean - v) / math.Sqrt(variance/n)
	p := 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.CDF(-math.Abs(t))
	return p < models.Significance
}

// Next is the step to run next, or done with the answer: the search
// first runs Max (a service that fails there has no answer within the
// bounds), then halves the interval between the largest step known to
// fail and the smallest known to pass until they are neighbours. A step
// not yet decided runs again.
func (b *Bisection) Next() (step int, done bool) {
	lo, hi := -1, b.last()
	if ok, pass := b.decided(hi); !ok {
		return hi, false
	} else if !pass {
		return -1, true
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		ok, pass := b.decided(mid)
		if !ok {
			return mid, false
		}
		if pass {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true
}

// Answer is a finished search: the smallest passing limit (Found false:
// none within the bounds), its neighbour below that failed (if any), and
// how clearly their p99s differ.
type Answer struct {
	Found    bool    `json:"found"`
	Limit    float64 `json:"limit,omitempty"`
	Below    float64 `json:"below,omitempty"` // the largest failing limit; 0 if Min passed
	Probes   int     `json:"probes"`          // runs in all
	Steps    int     `json:"steps"`           // limits tried
	BoundP   float64 `json:"boundary_p,omitempty"`
	BoundSay string  `json:"boundary"`
}

// Answer is the search's answer once Next says it is done.
func (b *Bisection) Answer() Answer {
	step, done := b.Next()
	a := Answer{Steps: len(b.runs)}
	for _, rs := range b.runs {
		a.Probes += len(rs)
	}
	if !done {
		a.BoundSay = "The search has not ended"
		return a
	}
	if step < 0 {
		a.BoundSay = fmt.Sprintf("The service misses its target even at the search's maximum, %.3g", b.Max)
		return a
	}
	a.Found, a.Limit = true, b.Limit(step)
	if step == 0 {
		a.BoundSay = fmt.Sprintf("The service meets its target at the search's minimum, %.3g: the answer may lie below it", b.Min)
		return a
	}
	a.Below = b.Limit(step - 1)
	var above, below []float64
	for _, r := range b.runs[step] {
		above = append(above, r.P99Ms)
	}
	for _, r := range b.runs[step-1] {
		below = append(below, r.P99Ms)
	}
	if _, _, p, ok := models.Welch(above, below); ok {
		a.BoundP = p
		if p < models.Significance {
			a.BoundSay = fmt.Sprintf("The p99s either side of the boundary differ beyond the noise (Welch's t-test, p = %.2g)", p)
		} else {
			a.BoundSay = fmt.Sprintf("The p99s either side of the boundary do not differ beyond the noise (Welch's t-test, p = %.2g): the boundary is within the noise", p)
		}
	} else {
		a.BoundSay = "One run either side decided the boundary: each was clearly away from the target"
	}
	return a
}
