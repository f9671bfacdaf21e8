package web

import (
	"testing"

	"github.com/limitlab/limitlab/internal/runner"
)

// A series' later runs follow its first run in the history, whatever
// came between them; a later run whose first is not listed stays put.
func TestHistoryRowsGroupASeries(t *testing.T) {
	s := &runner.Series{ID: "s1", Runs: []string{"s1", "s2", "s3"}}
	orphan := &runner.Series{ID: "gone", Runs: []string{"gone", "o2"}}
	runs := []runner.RunView{{ID: "s3", Series: s}, {ID: "x"}, {ID: "s2", Series: s}, {ID: "o2", Series: orphan}, {ID: "s1", Series: s}, {ID: "y"}}
	var got []string
	for _, r := range historyRows(runs) {
		id := r.Run.ID
		if r.Later {
			id = "  " + id
		}
		if r.Runs > 0 {
			id += " (series of 3)"
		}
		got = append(got, id)
	}
	want := []string{"x", "o2", "s1 (series of 3)", "  s2", "  s3", "y"}
	if len(got) != len(want) {
		t.Fatalf("rows %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("rows %q, want %q", got, want)
		}
	}
}
