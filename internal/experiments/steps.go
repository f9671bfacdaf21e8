package experiments

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// minCheckPeriods is the fewest CFS periods a throttling check judges:
// a lane that does not run has no periods, and is neither throttled nor not.
const minCheckPeriods = 5

// minOverSeconds is the least of an ended lane's samples a check judges.
const minOverSeconds = 0.5

// stepError is a step's problem, with where it lies in the lab file.
type stepError struct {
	specs.FieldError
	path []string
}

func checkSteps(steps []specs.Step, spec specs.Spec) *stepError {
	if len(steps) > specs.MaxSteps {
		return &stepError{specs.FieldError{Field: "steps", Message: fmt.Sprintf("at most %d steps, got %d", specs.MaxSteps, len(steps))}, []string{"steps"}}
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
			return &stepError{specs.FieldError{Field: at + "." + field, Message: fmt.Sprintf(format, args...)}, path}
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
				if _, errs := specs.ResolvePod(*r, specs.Host{}); errs != nil {
					return bad("change.limits."+errs[0].Field, "%s", errs[0].Message)
				}
			} else if _, errs := specs.ResolveChange(specs.Resources{}, c.Limits, specs.Host{}); errs != nil {
				return bad("change.limits."+errs[0].Field, "%s", errs[0].Message)
			}
		}
		if c := s.Check; c != nil {
			switch _, ok := lanes[c.Lane]; {
			case !ok:
				return bad("check.lane", "no lane is named %q", c.Lane)
			case !slices.Contains(specs.CheckMetrics, c.Metric):
				return bad("check.metric", "want one of %v, got %q", specs.CheckMetrics, c.Metric)
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
	specs.Step
	ChangeLane int             // -1 without a change
	Want       specs.Resources // the change's fields, resolved
	CheckLane  int             // -1 without a check
}

// ResolveSteps resolves a lab's steps against its plan; the lab file was
// checked when it was loaded.
func ResolveSteps(steps []specs.Step, plan specs.Plan) []ResolvedStep {
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
				r.Want = specs.ResizeWant(*res)
			} else {
				r.Want, _ = specs.ResolveChange(specs.Resources{}, s.Change.Limits, specs.Host{})
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
func (r ResolvedStep) Made(applied specs.Resources) bool {
	return applied.Merge(r.Want) == applied
}

// EvalCheck judges a check over a lane's samples taken at or after since: the
// window is the last Seconds of them. It says whether the window is full
// yet, the window's value, and whether it holds. A lane that is over and
// ran for less than the window is judged on what it has, if that is at
// least minOverSeconds.
func EvalCheck(c specs.Check, samples []models.CoreSample, since float64, over bool) (full bool, value float64, holds bool) {
	win := c.Seconds
	if win == 0 {
		win = specs.DefaultCheckSeconds
	}
	// The samples are in time order: the ones since the step, then the
	// last win seconds of those, are found by bisection (this runs at every
	// tick of a guided run, however long it has been going).
	startOf := func(s models.CoreSample) float64 { return s.T - s.DT }
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
		case specs.CheckCores:
			sum += s.Cores * s.DT
		case specs.CheckMemoryMiB:
			sum += s.MemBytes / (1 << 20) * s.DT
		case specs.CheckThrottledMs:
			sum += s.ThrottledMs
		case specs.CheckIOMBps:
			sum += s.IOBps / 1e6 * s.DT
		case specs.CheckGOMAXPROCS:
			if s.GOMAXPROCS > 0 {
				sum, reported = sum+s.GOMAXPROCS*s.DT, reported+s.DT
			}
		case specs.CheckP99Ms:
			if s.P99Ms > 0 {
				sum, reported = sum+s.P99Ms*s.DT, reported+s.DT
			}
		}
	}
	if covered < win*0.9 && !(over && covered >= minOverSeconds) {
		return false, 0, false
	}
	value = sum / covered
	if c.Metric == specs.CheckGOMAXPROCS || c.Metric == specs.CheckP99Ms {
		if reported == 0 {
			return false, 0, false // nothing reported yet
		}
		value = sum / reported
	}
	if c.Metric == specs.CheckThrottled || c.Metric == specs.CheckThrottledMs {
		if periods < minCheckPeriods {
			return false, 0, false // the lane barely ran: nothing to judge yet
		}
	}
	if c.Metric == specs.CheckThrottled {
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
