package web

import (
	"strings"

	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workload/wire"
)

// matrixRow is one figure of one runtime across a runtimes run's lanes.
type matrixRow struct {
	Runtime, Figure, Rule string
	Cells                 []matrixCell
}

// matrixCell is what a lane's runtime reported for a figure, and, once
// the run is judged, whether it agrees with the rule's prediction.
type matrixCell struct {
	Text      string
	Predicted string // the rule's, once judged
	Judged    bool
	Agrees    bool
	Why       string
}

// runtimeMatrix is a runtimes run's figures, a row each, a column per
// lane: each lane's last round, and the verdict's cells where there is
// one. Nil when no lane reported a round.
func runtimeMatrix(v runner.RunView) []matrixRow {
	var reported bool
	for _, l := range v.Lanes {
		reported = reported || len(l.Runtimes) > 0
	}
	if !reported {
		return nil
	}
	type key struct {
		lane            int
		runtime, figure string
	}
	judged := map[key]models.RuntimeCell{}
	if v.Verdict != nil {
		for _, c := range v.Verdict.Runtimes {
			judged[key{c.Lane, c.Runtime, c.Figure}] = c
		}
	}
	var rows []matrixRow
	for _, rt := range wire.Runtimes {
		for _, fig := range wire.ShownFigures(rt) {
			row := matrixRow{Runtime: rt, Figure: fig}
			for i, l := range v.Lanes {
				cell := matrixCell{Text: "–"}
				if n := len(l.Runtimes); n > 0 {
					cell.Text = reportedText(l.Runtimes[n-1].Reports, rt, fig)
				}
				if c, ok := judged[key{i, rt, fig}]; ok {
					cell.Judged, cell.Agrees, cell.Why = c.Judged, c.Agrees, c.Why
					if c.Judged {
						cell.Predicted = c.Prediction()
					}
					row.Rule = c.Rule
				}
				row.Cells = append(row.Cells, cell)
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// reportedText is a figure as a lane's runtime reported it: bytes in MiB,
// the collector by name, "–" where it reported none.
func reportedText(reports []wire.RuntimeReport, rt, fig string) string {
	for _, r := range reports {
		if r.Runtime != rt {
			continue
		}
		if r.Error != "" {
			return "failed"
		}
		if fig == "gc" {
			return r.GC
		}
		if x, ok := r.Figure(fig); ok {
			return models.FormatFigure(fig, x)
		}
	}
	return "–"
}

// runtimeVersions names the versions the lanes' runtimes reported, as
// "java 17.0.21+…".
func runtimeVersions(v runner.RunView) string {
	seen := map[string]string{}
	for _, l := range v.Lanes {
		for _, round := range l.Runtimes {
			for _, r := range round.Reports {
				if r.Version != "" {
					seen[r.Runtime] = r.Version
				}
			}
		}
	}
	var out []string
	for _, rt := range wire.Runtimes {
		if ver, ok := seen[rt]; ok {
			out = append(out, rt+" "+ver)
		}
	}
	return strings.Join(out, ", ")
}

// cellClass marks a judged cell as agreeing with its rule or not.
func cellClass(c matrixCell) string {
	switch {
	case !c.Judged:
		return "unjudged"
	case c.Agrees:
		return "agrees"
	}
	return "differs"
}

// cellTitle is a cell's hover text: its prediction, or why it has none.
func cellTitle(c matrixCell) string {
	switch {
	case c.Predicted != "":
		return "predicted " + c.Predicted
	case c.Why != "":
		return c.Why
	}
	return ""
}
