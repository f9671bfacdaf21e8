package web

import (
	"fmt"
	"strconv"

	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// labPlan is what a lab's page shows of its run before it runs: its lanes
// on one time axis, the model's expectation in each phase, and its guided
// steps with their checks.
type labPlan struct {
	Bars   []timelineBar
	Ticks  []timelineTick
	Phases []phaseRow
	Steps  []labStep
}

// timelineBar is one lane's bar: x and width in percent of the axis.
type timelineBar struct {
	Lane       int
	Name, Text string
	X, W       string
	Open       bool
}

type timelineTick struct{ X, Label string }

// phaseRow is one phase: its span and each lane's expected CPU there,
// "—" for a lane not running.
type phaseRow struct {
	Name, Span string
	Cells      []string
}

type labStep struct {
	Prompt, Change, Check string
}

func pct(x float64) string { return strconv.FormatFloat(100*x, 'f', 2, 64) + "%" }

func secondsText(s float64) string { return strconv.FormatFloat(s, 'f', -1, 64) + " s" }

// planOfLab lays a lab's plan out for its page.
func planOfLab(lab experiments.Lab, plan specs.Plan, h models.ModelHost) labPlan {
	var out labPlan
	if tl := models.Timeline(plan); tl != nil {
		end := plan.Duration.Seconds()
		for _, l := range tl {
			if !l.Open {
				end = max(end, l.To)
			}
		}
		for _, l := range tl {
			b := timelineBar{Lane: l.Lane, Name: plan.Lanes[l.Lane].Name, X: pct(l.From / end), W: pct((l.To - l.From) / end), Open: l.Open}
			b.Text = fmt.Sprintf("%s to %s", secondsText(l.From), secondsText(l.To))
			if l.Open {
				b.Text = fmt.Sprintf("from %s until its work is done, at most %s", secondsText(l.From), secondsText(l.To))
			}
			out.Bars = append(out.Bars, b)
		}
		step := 10.0
		for end/step > 8 {
			step *= 2
		}
		for t := 0.0; t <= end+1e-9; t += step {
			out.Ticks = append(out.Ticks, timelineTick{X: pct(t / end), Label: secondsText(t)})
		}
	}
	for k, p := range models.PlannedPhases(plan, h) {
		row := phaseRow{Name: "phase " + strconv.Itoa(k+1), Span: secondsText(p.From) + " – " + secondsText(p.To)}
		row.Cells = make([]string, len(plan.Lanes))
		for i := range row.Cells {
			row.Cells[i] = "—"
		}
		for j, i := range p.Lanes {
			row.Cells[i] = "runs"
			if p.Cores[j] >= 0 {
				row.Cells[i] = f2(p.Cores[j])
			}
		}
		out.Phases = append(out.Phases, row)
	}
	for _, s := range lab.Steps {
		st := labStep{Prompt: s.Prompt}
		if c := s.Change; c != nil {
			st.Change = c.Text()
		}
		if c := s.Check; c != nil {
			st.Check = c.Text()
		}
		out.Steps = append(out.Steps, st)
	}
	return out
}
