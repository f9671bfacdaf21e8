package workshop

import (
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workload/wire"
)

// TestAnImportsRuntimesAreChecked: an imported run's runtime reports are
// checked as the server checks a workload's, kept on runtimes lanes only,
// and its verdict's cells must name a lane and a shown figure, their
// texts cut short.
func TestAnImportsRuntimesAreChecked(t *testing.T) {
	good := []wire.RuntimeRound{{AtS: 1, Reports: []wire.RuntimeReport{{Runtime: "python", Version: "3.11.2",
		Figures: []wire.RuntimeFigure{{Name: "cpu_count", Value: 2}}}}}}
	view := func() runner.RunView {
		return runner.RunView{Lanes: []runner.LaneResult{
			{Workload: specs.Workload{Kind: specs.KindRuntimes}, Runtimes: good},
			{Workload: specs.Workload{Kind: specs.KindMD5}, Runtimes: good},
		}, Verdict: &models.Verdict{Runtimes: []models.RuntimeCell{
			{Lane: 0, Runtime: "java", Figure: "gc", Rule: strings.Repeat("r", 5000)},
		}}}
	}
	v := view()
	if err := cleanRuntimes(&v); err != nil {
		t.Fatal(err)
	}
	if len(v.Lanes[0].Runtimes) != 1 || v.Lanes[1].Runtimes != nil {
		t.Errorf("kept on the runtimes lane %d rounds, on the md5 lane %d", len(v.Lanes[0].Runtimes), len(v.Lanes[1].Runtimes))
	}
	if r := v.Verdict.Runtimes[0].Rule; r != clip(strings.Repeat("r", 5000), maxImportText) {
		t.Errorf("a rule of %d bytes kept", len(r))
	}
	for name, spoil := range map[string]func(*runner.RunView){
		"a markup version": func(v *runner.RunView) {
			v.Lanes[0].Runtimes = []wire.RuntimeRound{{Reports: []wire.RuntimeReport{{Runtime: "go", Version: "<b>"}}}}
		},
		"an unknown figure": func(v *runner.RunView) { v.Verdict.Runtimes[0].Figure = "cores" },
		"a lane not there":  func(v *runner.RunView) { v.Verdict.Runtimes[0].Lane = 2 },
		"the gc of go":      func(v *runner.RunView) { v.Verdict.Runtimes[0].Runtime = "go" },
	} {
		v := view()
		spoil(&v)
		if err := cleanRuntimes(&v); err == nil {
			t.Errorf("%s: imported", name)
		}
	}
}
