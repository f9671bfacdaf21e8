package workshop

import "testing"

// TestFakeSearchTransitions covers every (state, event) pair: a running
// search ends as each event says, and an ended one stays as it ended.
func TestFakeSearchTransitions(t *testing.T) {
	events := map[searchEvent]string{searchAnswered: "answered", searchFailed: "failed", searchPastDeadline: "past its deadline", searchStopped: "stopped"}
	want := map[searchEvent]SearchState{searchAnswered: SearchDone, searchFailed: SearchFailed, searchPastDeadline: SearchFailed, searchStopped: SearchStopped}
	for _, from := range []SearchState{SearchRunning, SearchDone, SearchFailed, SearchStopped} {
		for e, name := range events {
			got, moved := from.transition(e)
			switch {
			case from == SearchRunning && (!moved || got != want[e]):
				t.Errorf("running, %s: %s (moved %v), want %s", name, got, moved, want[e])
			case from != SearchRunning && (moved || got != from):
				t.Errorf("%s, %s: %s (moved %v), want it to stay %s", from, name, got, moved, from)
			}
		}
	}
}
