package runner

import "testing"

// Every pair of lane states: a lane moves only forward through its life,
// once, and an ended lane keeps its end.
func TestLaneStateMovesOverEveryPair(t *testing.T) {
	states := []LaneState{LanePending, LaneRunning, LaneExited, LaneSkipped, LaneInterrupted}
	allowed := map[[2]LaneState]bool{
		{LanePending, LaneRunning}:     true,
		{LanePending, LaneSkipped}:     true,
		{LanePending, LaneExited}:      true, // its start failed
		{LanePending, LaneInterrupted}: true,
		{LaneRunning, LaneExited}:      true,
		{LaneRunning, LaneInterrupted}: true,
	}
	for _, from := range states {
		for _, to := range states {
			got, moved := from.To(to)
			want, wantMoved := from, false
			if allowed[[2]LaneState{from, to}] {
				want, wantMoved = to, true
			}
			if got != want || moved != wantMoved {
				t.Errorf("%s → %s: %s (moved %v), want %s (moved %v)", from, to, got, moved, want, wantMoved)
			}
			if from.Over() && moved {
				t.Errorf("an ended lane (%s) moved to %s", from, to)
			}
		}
	}
	l := &laneState{state: LanePending}
	if !l.move(LaneRunning) || l.move(LanePending) || !l.move(LaneExited) || l.move(LaneRunning) || l.state != LaneExited {
		t.Errorf("a lane's life: ended %s", l.state)
	}
}
