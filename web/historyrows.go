package web

import "github.com/limitlab/limitlab/internal/runner"

// historyRow is one run of the history table: a series' later runs are
// grouped under its first run, which links to the series.
type historyRow struct {
	Run runner.RunView
	// Runs is, on a series' first run, how many runs the series has.
	Runs int
	// Later marks a series' later run, listed under its first.
	Later bool
}

// historyRows orders runs (newest first) so that each series' later runs
// follow its first run, in the series' order. A later run whose first run
// is not in the list stays where it is.
func historyRows(runs []runner.RunView) []historyRow {
	byID := make(map[string]runner.RunView, len(runs))
	for _, r := range runs {
		byID[r.ID] = r
	}
	isLater := func(r runner.RunView) bool {
		if r.Series == nil || r.Series.ID == r.ID {
			return false
		}
		_, firstListed := byID[r.Series.ID]
		return firstListed
	}
	out := make([]historyRow, 0, len(runs))
	for _, r := range runs {
		if isLater(r) {
			continue // listed under its first run
		}
		row := historyRow{Run: r}
		if s := r.Series; s != nil && s.ID == r.ID {
			row.Runs = len(s.Runs)
			out = append(out, row)
			for _, id := range s.Runs[1:] {
				if later, ok := byID[id]; ok {
					out = append(out, historyRow{Run: later, Later: true})
				}
			}
			continue
		}
		out = append(out, row)
	}
	return out
}

// seriesOf is the id of the series a run belongs to, or "".
func seriesOf(r runner.RunView) string {
	if r.Series == nil {
		return ""
	}
	return r.Series.ID
}
