package runner

import (
	"fmt"

	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// Step states, in the order a step goes through them.
const (
	StepWaiting = "waiting" // an earlier step is not done yet
	StepActive  = "active"
	StepDone    = "done"
	// StepUnfinished is a step the run ended on before it was done; its
	// view's Outcome says how far it came.
	StepUnfinished = "unfinished"
)

// stepState is where one of a guided lab's steps is; guarded by Run.mu.
type stepState struct {
	state   string
	since   float64 // run seconds from which its check reads samples
	changed bool    // its change has been made
	full    bool    // its check's window is full
	holds   bool
	value   float64
	doneAt  float64
}

// StepView is one step of a guided lab, for the page and the API.
type StepView struct {
	Index  int    `json:"index"`
	Prompt string `json:"prompt"`
	Hint   string `json:"hint,omitempty"`
	// Change is the live change the step asks for, as the docker CLI
	// would be given it, and its lane and limits for the page's button.
	Change       string        `json:"change,omitempty"`
	ChangeLane   int           `json:"change_lane"`
	ChangeLimits *specs.Limits `json:"change_limits,omitempty"`
	Changed      bool          `json:"changed,omitempty"`
	// Check is the step's check in words.
	Check  string  `json:"check,omitempty"`
	Metric string  `json:"metric,omitempty"`
	State  string  `json:"state"`
	Full   bool    `json:"full,omitempty"`  // the check has a full window
	Holds  bool    `json:"holds,omitempty"` // and it holds
	Value  float64 `json:"value,omitempty"` // the window's value
	// ValueText is the value in words for the page, once the window is
	// full: "(now 62%)", "(now 1.5 ms/s)", "(now 0.503)".
	ValueText string  `json:"value_text,omitempty"`
	DoneAt    float64 `json:"done_at,omitempty"`
	// Outcome says, of a step the run ended on before it was done, why it
	// was not: never reached, its change never made, its check never
	// judged, or judged and never holding.
	Outcome string `json:"outcome,omitempty"`
}

// valueText is a step's last measured value in words, once its check's
// window is full; the page shows it as the server sends it.
func valueText(metric string, full bool, value float64) string {
	switch {
	case !full:
		return ""
	case metric == specs.CheckThrottled:
		return fmt.Sprintf("(now %.0f%%)", 100*value)
	case metric == specs.CheckThrottledMs:
		return fmt.Sprintf("(now %.3g ms/s)", value)
	}
	return fmt.Sprintf("(now %.3g)", value)
}

// guide is a guided lab's steps as resolved against the plan, and where
// each is; it lives in the run's state, guarded by Run.mu.
type guide struct {
	steps  []experiments.ResolvedStep
	states []stepState
}

// newGuide readies a guided run's steps: the first is active from the
// start.
func newGuide(plan specs.Plan) guide {
	g := guide{steps: experiments.ResolveSteps(plan.Steps, plan)}
	g.states = make([]stepState, len(g.steps))
	for i := range g.states {
		g.states[i].state = StepWaiting
	}
	if len(g.states) > 0 {
		g.states[0].state = StepActive
	}
	return g
}

// advance evaluates the active step on the lanes' samples so far, at run
// time now, ticking it and activating the next while their checks hold.
// It says whether any step's state, window or result changed.
func (g *guide) advance(lanes []*laneState, now float64) bool {
	moved := false
	for k := range g.states {
		st := &g.states[k]
		if st.state == StepDone {
			continue
		}
		if st.state == StepWaiting {
			st.state, st.since, moved = StepActive, now, true
		}
		rs := g.steps[k]
		if rs.ChangeLane >= 0 && !st.changed {
			return moved // waiting for the participant's change
		}
		if rs.Check != nil {
			lane := lanes[rs.CheckLane]
			full, value, holds := experiments.EvalCheck(*rs.Check, lane.samples, st.since, lane.state.Over())
			if full != st.full || holds != st.holds {
				moved = true
			}
			st.full, st.holds, st.value = full, holds, value
			if !holds {
				return moved
			}
		}
		st.state, st.doneAt, moved = StepDone, now, true
	}
	return moved
}

// changed notes a live change of a lane at run time at: the active step's
// change is made if the lane's limits now include it, and its check counts
// samples from then on; a step with no check is done at once.
func (g *guide) changed(lanes []*laneState, lane int, applied specs.Resources, at float64) {
	for k := range g.states {
		st := &g.states[k]
		if st.state != StepActive {
			continue
		}
		if rs := g.steps[k]; rs.ChangeLane == lane && !st.changed && rs.Made(applied) {
			st.changed, st.since = true, at
			g.advance(lanes, at)
		}
		return
	}
}

// views are the steps for the run's view; once the run has ended, a step
// it ended on before it was done is unfinished, and says why.
func (g *guide) views(ended bool) []StepView {
	out := viewsOf(g.steps)
	for k := range out {
		st := g.states[k]
		out[k].Changed, out[k].State, out[k].Full, out[k].Holds, out[k].Value, out[k].DoneAt = st.changed, st.state, st.full, st.holds, st.value, st.doneAt
		out[k].ValueText = valueText(out[k].Metric, st.full, st.value)
		if ended {
			Unfinish(&out[k])
		}
	}
	return out
}

// Unfinish marks a step that is not done, of a run that has ended, as
// unfinished, with why: a page that kept it "in progress" would say the
// run could still tick it.
func Unfinish(v *StepView) {
	switch {
	case v.State == StepDone || v.State == StepUnfinished:
		return
	case v.State == StepWaiting:
		v.Outcome = "Not reached: the run ended before the steps above it were done."
	case v.Change != "" && !v.Changed:
		v.Outcome = "Not acted on: the run ended before this step's change (" + v.Change + ") was made."
	case v.Check != "" && !v.Full:
		v.Outcome = "Not judged: the run ended before this step's check had a full window of samples."
	case v.ValueText != "":
		v.Outcome = "Did not hold: the check was still false when the run ended " + v.ValueText + "."
	default:
		v.Outcome = "Did not hold: the check was still false when the run ended."
	}
	v.State = StepUnfinished
}

// StepViews are a plan's steps as a run that has not begun them shows
// them: the texts from the lab, every step waiting.
func StepViews(plan specs.Plan) []StepView {
	return viewsOf(experiments.ResolveSteps(plan.Steps, plan))
}

func viewsOf(steps []experiments.ResolvedStep) []StepView {
	if len(steps) == 0 {
		return nil
	}
	out := make([]StepView, len(steps))
	for k, rs := range steps {
		v := StepView{Index: k, Prompt: rs.Prompt, Hint: rs.Hint, ChangeLane: rs.ChangeLane, State: StepWaiting}
		if c := rs.Change; c != nil {
			v.Change = c.Text()
			limits := c.Limits
			v.ChangeLimits = &limits
		}
		if c := rs.Check; c != nil {
			v.Check, v.Metric = c.Text(), c.Metric
		}
		out[k] = v
	}
	return out
}
