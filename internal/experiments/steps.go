package experiments

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Step is one stage of a guided lab: what to look at or do, optionally a
// limit change the participant makes while the lane runs, and a check over
// the measured stream that ticks the step once it holds. A step has a
// change, a check or both; the steps are taken in order.
type Step struct {
	Prompt string      `json:"prompt"`
	Change *StepChange `json:"change,omitempty"`
	Check  *Check      `json:"check,omitempty"`
	// Hint is shown while the check fails.
	Hint string `json:"hint,omitempty"`
}

// StepChange is a live change of one lane's limits.
type StepChange struct {
	Lane   string `json:"lane"`
	Limits Limits `json:"limits"`
}

// Check is a condition on one lane's samples over the last Seconds of
// those taken since its step began (and since its change was made).
type Check struct {
	Lane   string  `json:"lane"`
	Metric string  `json:"metric"` // one of CheckMetrics
	Op     string  `json:"op"`     // "<", ">" or "within"
	Value  float64 `json:"value"`
	// Tolerance is relative, for "within": 0.1 is ±10% of Value.
	Tolerance float64 `json:"tolerance,omitempty"`
	Seconds   float64 `json:"seconds,omitempty"` // DefaultCheckSeconds if 0
}

// Check metrics: each a mean over the check's window.
const (
	CheckCores     = "cores"     // CPU in cores
	CheckThrottled = "throttled" // share of CFS periods throttled, 0 to 1
	// CheckThrottledMs is milliseconds throttled a second, summed over
	// the CPUs the group ran on: a share of periods counts one throttled
	// for a microsecond, this does not.
	CheckThrottledMs = "throttled_ms"
	CheckMemoryMiB   = "memory_mib"
	CheckIOMBps      = "io_mbps" // block IO read and written, MB/s
	// CheckGOMAXPROCS is a Go workload's GOMAXPROCS as it reports it;
	// CheckP99Ms a load lane's p99 latency, over the intervals it
	// reported in the window.
	CheckGOMAXPROCS = "gomaxprocs"
	CheckP99Ms      = "p99_ms"
)

// CheckMetrics are the metrics a step's check may use.
var CheckMetrics = []string{CheckCores, CheckThrottled, CheckThrottledMs, CheckMemoryMiB, CheckIOMBps, CheckGOMAXPROCS, CheckP99Ms}

// DefaultCheckSeconds is a check's window unless it sets one.
const DefaultCheckSeconds = 3

// minCheckPeriods is the fewest CFS periods a throttling check judges:
// a lane that does not run has no periods, and is neither throttled nor not.
const minCheckPeriods = 5

// minOverSeconds is the least of an ended lane's samples a check judges.
const minOverSeconds = 0.5

// MaxSteps bounds a lab's steps.
const MaxSteps = 20

// stepError is a step's problem, with where it lies in the lab file.
type stepError struct {
	FieldError
	path []string
}

func checkSteps(steps []Step, spec Spec) *stepError {
	if len(steps) > MaxSteps {
		return &stepError{FieldError{Field: "steps", Message: fmt.Sprintf("at most %d steps, got %d", MaxSteps, len(steps))}, []string{"steps"}}
	}
	lanes := map[string]int{}
	for i, l := range spec.Lanes {
		name := strings.TrimSpace(l.Name)
		if name == "" {
			name = "lane " + strconv.Itoa(i+1)
		}
		lanes[name] = i
	}
	for i, s := range steps {
		at := "steps[" + strconv.Itoa(i) + "]"
		bad := func(field, format string, args ...any) *stepError {
			path := append([]string{"steps", strconv.Itoa(i)}, strings.Split(field, ".")...)
			return &stepError{FieldError{Field: at + "." + field, Message: fmt.Sprintf(format, args...)}, path}
		}
		switch {
		case strings.TrimSpace(s.Prompt) == "" || len(s.Prompt) > 1000:
			return bad("prompt", "want a prompt of 1 to 1000 characters")
		case len(s.Hint) > 500:
			return bad("hint", "at most 500 characters")
		case s.Change == nil && s.Check == nil:
			return bad("prompt", "a step needs a change, a check or both")
		}
		if c := s.Change; c != nil {
			if _, ok := lanes[c.Lane]; !ok {
				return bad("change.lane", "no lane is named %q", c.Lane)
			}
			if r := c.Limits.Resources; r != nil {
				// A pod's resize: checked against the pod when it is made.
				if _, errs := ResolvePod(*r, Host{}); errs != nil {
					return bad("change.limits."+errs[0].Field, "%s", errs[0].Message)
				}
			} else if _, errs := ResolveChange(Resources{}, c.Limits, Host{}); errs != nil {
				return bad("change.limits."+errs[0].Field, "%s", errs[0].Message)
			}
		}
		if c := s.Check; c != nil {
			switch _, ok := lanes[c.Lane]; {
			case !ok:
				return bad("check.lane", "no lane is named %q", c.Lane)
			case !slices.Contains(CheckMetrics, c.Metric):
				return bad("check.metric", "want one of %v, got %q", CheckMetrics, c.Metric)
			case c.Op != "<" && c.Op != ">" && c.Op != "within":
				return bad("check.op", `want "<", ">" or "within", got %q`, c.Op)
			case c.Op == "within" && (c.Tolerance <= 0 || c.Tolerance >= 1):
				return bad("check.tolerance", "within needs a tolerance between 0 and 1, got %g", c.Tolerance)
			case math.IsNaN(c.Value) || math.IsInf(c.Value, 0) || c.Value < 0 || c.Value > 1e6:
				return bad("check.value", "want 0 to 1e6, got %g", c.Value)
			case c.Seconds < 0 || c.Seconds > 60:
				return bad("check.seconds", "want 0 to 60 seconds, got %g", c.Seconds)
			}
		}
	}
	return nil
}

// ResolvedSteps are a lab's steps with their lanes as indexes and their
// changes resolved, for a plan.
type ResolvedStep struct {
	Step
	ChangeLane int       // -1 without a change
	Want       Resources // the change's fields, resolved
	CheckLane  int       // -1 without a check
}

// ResolveSteps resolves a lab's steps against its plan; the lab file was
// checked when it was loaded.
func ResolveSteps(steps []Step, plan Plan) []ResolvedStep {
	index := map[string]int{}
	for i, l := range plan.Lanes {
		index[l.Name] = i
	}
	out := make([]ResolvedStep, 0, len(steps))
	for _, s := range steps {
		r := ResolvedStep{Step: s, ChangeLane: -1, CheckLane: -1}
		if s.Change != nil {
			r.ChangeLane = index[s.Change.Lane]
			if res := s.Change.Limits.Resources; res != nil {
				r.Want = resizeWant(*res)
			} else {
				r.Want, _ = ResolveChange(Resources{}, s.Change.Limits, Host{})
			}
		}
		if s.Check != nil {
			r.CheckLane = index[s.Check.Lane]
		}
		out = append(out, r)
	}
	return out
}

// Made says whether limits now applied to a lane include a step's change.
func (r ResolvedStep) Made(applied Resources) bool {
	return applied.Merge(r.Want) == applied
}

// Eval judges a check over a lane's samples taken at or after since: the
// window is the last Seconds of them. It says whether the window is full
// yet, the window's value, and whether it holds. A lane that is over and
// ran for less than the window is judged on what it has, if that is at
// least minOverSeconds.
func (c Check) Eval(samples []CoreSample, since float64, over bool) (full bool, value float64, holds bool) {
	win := c.Seconds
	if win == 0 {
		win = DefaultCheckSeconds
	}
	// The samples are in time order: the ones since the step, then the
	// last win seconds of those, are found by bisection (this runs at every
	// tick of a guided run, however long it has been going).
	startOf := func(s CoreSample) float64 { return s.T - s.DT }
	after := samples[sort.Search(len(samples), func(i int) bool { return startOf(samples[i]) >= since-1e-9 }):]
	if len(after) == 0 {
		return false, 0, false
	}
	end := after[len(after)-1].T
	window := after[sort.Search(len(after), func(i int) bool { return startOf(after[i]) >= end-win-1e-9 }):]
	var covered, sum, periods, throttled, reported float64
	for _, s := range window {
		covered += s.DT
		periods += s.Periods
		throttled += s.ThrottledPeriods
		switch c.Metric {
		case CheckCores:
			sum += s.Cores * s.DT
		case CheckMemoryMiB:
			sum += s.MemBytes / (1 << 20) * s.DT
		case CheckThrottledMs:
			sum += s.ThrottledMs
		case CheckIOMBps:
			sum += s.IOBps / 1e6 * s.DT
		case CheckGOMAXPROCS:
			if s.GOMAXPROCS > 0 {
				sum, reported = sum+s.GOMAXPROCS*s.DT, reported+s.DT
			}
		case CheckP99Ms:
			if s.P99Ms > 0 {
				sum, reported = sum+s.P99Ms*s.DT, reported+s.DT
			}
		}
	}
	if covered < win*0.9 && !(over && covered >= minOverSeconds) {
		return false, 0, false
	}
	value = sum / covered
	if c.Metric == CheckGOMAXPROCS || c.Metric == CheckP99Ms {
		if reported == 0 {
			return false, 0, false // nothing reported yet
		}
		value = sum / reported
	}
	if c.Metric == CheckThrottled || c.Metric == CheckThrottledMs {
		if periods < minCheckPeriods {
			return false, 0, false // the lane barely ran: nothing to judge yet
		}
	}
	if c.Metric == CheckThrottled {
		value = throttled / periods
	}
	switch c.Op {
	case "<":
		holds = value < c.Value
	case ">":
		holds = value > c.Value
	case "within":
		holds = math.Abs(value-c.Value) <= c.Tolerance*c.Value
	}
	return true, value, holds
}

// Text is the check in words, for the page.
func (c Check) Text() string {
	what := map[string]string{CheckCores: "cores", CheckThrottled: "throttled periods", CheckThrottledMs: "throttled ms a second", CheckMemoryMiB: "memory (MiB)", CheckIOMBps: "block IO (MB/s)",
		CheckGOMAXPROCS: "GOMAXPROCS", CheckP99Ms: "p99 latency (ms)"}[c.Metric]
	value := strconv.FormatFloat(c.Value, 'g', 4, 64)
	if c.Metric == CheckThrottled {
		value = strconv.FormatFloat(c.Value*100, 'g', 4, 64) + "%"
	}
	win := c.Seconds
	if win == 0 {
		win = DefaultCheckSeconds
	}
	var cond string
	switch c.Op {
	case "within":
		cond = fmt.Sprintf("within %s of %s", percent(c.Tolerance), value)
	default:
		cond = c.Op + " " + value
	}
	return fmt.Sprintf("%s's %s %s over %gs", c.Lane, what, cond, win)
}

// Text is the change as it is sent: kubectl's resize of a pod lane's
// resources, or the docker CLI's update of a container's flags.
func (c StepChange) Text() string {
	if r := c.Limits.Resources; r != nil {
		return fmt.Sprintf("kubectl patch pod %s --subresource resize --patch '%s'", c.Lane, resourcesPatch(PodContainer, *r))
	}
	b, _ := json.Marshal(c.Limits)
	var m map[string]string
	_ = json.Unmarshal(b, &m)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var s strings.Builder
	s.WriteString("docker update")
	for _, k := range keys {
		if m[k] != "" {
			fmt.Fprintf(&s, " --%s %s", k, m[k])
		}
	}
	s.WriteString(" " + c.Lane)
	return s.String()
}
