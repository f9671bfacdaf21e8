package models

import (
	"math"
	"testing"
)

// A lane predicted starved (under the floor of a ratio that can be
// measured) deviates by nothing while it stays starved, and by its excess
// over the floor when it got more; ratios above the floor deviate
// relatively.
func TestRatioDeviationOfAStarvedLane(t *testing.T) {
	for _, m := range []float64{0.004, 0.012, 0.045, 0.05} {
		if d := ratioDeviation(m, 0.004); d != 0 {
			t.Errorf("a starved lane's %.1f%% against 0.4%% deviates %.2f", m*100, d)
		}
	}
	if d := ratioDeviation(0.08, 0.004); math.Abs(d-0.6) > 1e-9 {
		t.Errorf("a lane predicted starved that got 8%% deviates %.3f, want 0.6", d)
	}
	if d := ratioDeviation(0.5, 0.4); math.Abs(d-0.25) > 1e-9 {
		t.Errorf("ratios above the floor deviate relatively: %.3f", d)
	}
}
