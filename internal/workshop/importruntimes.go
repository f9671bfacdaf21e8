package workshop

import (
	"fmt"
	"slices"

	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workload/wire"
)

// maxRuntimeCells bounds an imported runtimes verdict: every figure of
// every runtime in every lane.
const maxRuntimeCells = specs.MaxLanes * 16

// cleanRuntimes checks an imported run's runtime reports as the server
// checks a workload's (wire.CheckRuntimeRounds), on runtimes lanes only,
// and its verdict's cells: each names a lane of the run and a figure a
// runtime reports, and its texts are cut short.
func cleanRuntimes(v *runner.RunView) error {
	for i := range v.Lanes {
		l := &v.Lanes[i]
		if l.Workload.Kind != specs.KindRuntimes {
			l.Runtimes = nil
			continue
		}
		if err := wire.CheckRuntimeRounds(l.Runtimes); err != nil {
			return fmt.Errorf("lane %d's runtime reports: %w", i, err)
		}
	}
	vd := v.Verdict
	if vd == nil {
		return nil
	}
	if len(vd.Runtimes) > maxRuntimeCells {
		return fmt.Errorf("a verdict of %d runtime figures, at most %d", len(vd.Runtimes), maxRuntimeCells)
	}
	for k := range vd.Runtimes {
		c := &vd.Runtimes[k]
		if c.Lane < 0 || c.Lane >= len(v.Lanes) || !slices.Contains(wire.ShownFigures(c.Runtime), c.Figure) {
			return fmt.Errorf("runtime figure %d: lane %d, %q %q, which cannot be", k, c.Lane, c.Runtime, c.Figure)
		}
		c.Version, c.Rule, c.Why = clip(c.Version, maxImportShort), clip(c.Rule, maxImportText), clip(c.Why, maxImportText)
		c.PredictedText, c.MeasuredText = clip(c.PredictedText, maxImportShort), clip(c.MeasuredText, maxImportShort)
	}
	return nil
}
