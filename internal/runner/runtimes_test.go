package runner_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workload/wire"
)

// TestRuntimeCPUsLab runs runtime-cpus on the engine, with the runtimes
// image that images/runtimes/build.sh put there (the test fails without
// it): every lane reports all four runtimes in its first and last rounds,
// the live change lane is taken from --cpus 1.5 to 0.5 once its first
// round is in, and every figure of every lane agrees with its runtime's
// rule, the cells' verdict naming any that does not. Its matrix is
// logged for docs/benchmarks.md.
func TestRuntimeCPUsLab(t *testing.T) {
	m := newTestManager(t)
	h := m.Pool().Host()
	if h.RuntimesImage == "" {
		t.Fatalf("no runtimes image on this engine: %s", h.NoRuntimes)
	}
	r := startSpec(t, m, `{"lab": "runtime-cpus"}`)
	live := len(r.View().Lanes) - 1
	waitFor(t, time.Minute, "the live change lane running", func() bool {
		v := r.View()
		return v.Lanes[live].State == runner.LaneRunning
	})
	// A round takes a few seconds; the change leaves several after it.
	time.Sleep(4 * time.Second)
	rec, err := m.Changes().UpdateLimits(context.Background(), r.ID(), live, specs.Limits{CPUs: "0.5"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Applied.NanoCPUs != 5e8 {
		t.Errorf("applied after the change: %+v", rec.Applied)
	}
	v := waitDone(t, r, 3*time.Minute)
	if v.State != runner.StateDone {
		t.Fatalf("run %s: %s", v.State, v.Error)
	}
	for i, l := range v.Lanes {
		if len(l.Runtimes) != 2 {
			t.Errorf("lane %d (%s): %d rounds, want the first and the last", i, l.Name, len(l.Runtimes))
			continue
		}
		for _, round := range l.Runtimes {
			if len(round.Reports) != len(wire.Runtimes) {
				t.Errorf("lane %d (%s): %d runtimes reported at %.1f s", i, l.Name, len(round.Reports), round.AtS)
			}
			for _, rep := range round.Reports {
				if rep.Error != "" {
					t.Errorf("lane %d (%s): %s failed: %s", i, l.Name, rep.Runtime, rep.Error)
				}
			}
		}
	}
	verdict := v.Verdict
	if verdict == nil || !verdict.Judged {
		t.Fatalf("not judged: %+v", verdict)
	}
	var b strings.Builder
	for _, c := range verdict.Runtimes {
		fmt.Fprintf(&b, "\n  %-12s %-6s %-22s measured %-14s predicted %-14s agrees %v %s", v.Lanes[c.Lane].Name, c.Runtime, c.Figure,
			cellText(c.MeasuredText, c.Measured), cellText(c.PredictedText, c.Predicted), c.Agrees, c.Why)
	}
	enginetest.Figure(t, "runtime-cpus (every runtime's figures under each lane's limits)", "%d cells:%s", len(verdict.Runtimes), b.String())
	if !verdict.Pass {
		t.Errorf("the runtimes' figures against their rules: %s", verdict.Explanation)
	}
	if len(verdict.Runtimes) < len(v.Lanes)*12 {
		t.Errorf("%d cells, want at least 12 a lane", len(verdict.Runtimes))
	}
}

func cellText(text string, v float64) string {
	if text != "" {
		return text
	}
	return fmt.Sprintf("%g", v)
}
