package workload

import (
	"testing"

	"github.com/limitlab/limitlab/internal/workload/wire"
)

// TestRuntimesWorkRoundsAtLeastTwice: however short its seconds, the
// runtimes workload keeps a first and a last round, each with every
// runtime once; a probe that cannot run here (no image's /opt/limitlab)
// gives a report that says why and passes the server's checks.
func TestRuntimesWorkRoundsAtLeastTwice(t *testing.T) {
	var rounds runtimeRounds
	var c counter
	if _, err := runtimesWork(0.001, &rounds, &c); err != nil {
		t.Fatal(err)
	}
	got := rounds.rounds()
	if len(got) != 2 || c.get() != 2 {
		t.Fatalf("%d rounds kept, %g counted; want 2", len(got), c.get())
	}
	if err := wire.CheckRuntimeRounds(got); err != nil {
		t.Fatal(err)
	}
	for _, round := range got {
		if len(round.Reports) != len(wire.Runtimes) || round.Reports[0].Runtime != "go" || round.Reports[0].Error != "" {
			t.Fatalf("round at %.2f s: %+v", round.AtS, round.Reports)
		}
		for _, r := range round.Reports[1:] {
			if r.Error == "" {
				t.Errorf("%s reported outside the image: %+v", r.Runtime, r)
			}
		}
	}
	if got[1].AtS < RuntimeRoundGap.Seconds() {
		t.Errorf("the second round began at %.2f s, before the gap of %s", got[1].AtS, RuntimeRoundGap)
	}
}
