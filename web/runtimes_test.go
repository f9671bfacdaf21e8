package web

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workload/wire"
)

// TestTheRuntimeMatrix renders a judged runtimes run: a row per figure, a
// column per lane, a differing cell marked with its rule's prediction,
// the verdict's rows table left out, and a cell's text from an imported
// file escaped.
func TestTheRuntimeMatrix(t *testing.T) {
	round := []wire.RuntimeRound{{AtS: 1, Reports: []wire.RuntimeReport{
		{Runtime: "java", Version: "17.0.21", GC: "Serial", Figures: []wire.RuntimeFigure{{Name: "available_processors", Value: 1}}},
		{Runtime: "python", Version: "3.11.2", Figures: []wire.RuntimeFigure{{Name: "cpu_count", Value: 2}}},
	}}}
	v := runner.RunView{State: runner.StateDone, Lanes: []runner.LaneResult{
		{Name: "cpus 0.5", Runtimes: round},
		{Name: "cpuset 0", Runtimes: round},
	}, Verdict: &models.Verdict{Judged: true, Metric: specs.MetricRuntimes, Explanation: "1 of 2 figures differ",
		Runtimes: []models.RuntimeCell{
			{Lane: 0, Runtime: "java", Figure: "available_processors", Predicted: 1, Measured: 1, Judged: true, Agrees: true, Rule: "JDK <17>"},
			{Lane: 1, Runtime: "python", Figure: "cpu_count", Predicted: 3, Measured: 2, Judged: true, Rule: "3.11"},
		}}}
	var b bytes.Buffer
	if err := results(v).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{`data-testid="runtime-matrix"`, `<th>cpus 0.5</th>`, `data-testid="runtime-java-gc"`, `Serial`,
		`2 ✗ rule: 3`, `java 17.0.21, python 3.11.2`, `title="JDK &lt;17&gt;"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the matrix lacks %q", want)
		}
	}
	if strings.Contains(page, "Deviation") {
		t.Error("a runtimes verdict drew the rows table too")
	}
}
