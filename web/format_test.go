package web

import "testing"

// TestDeviationText: a ratio's deviation is relative, but against a
// prediction of none or next to none it is absolute: 0.027 against a
// starved 0.004 is not "+577%".
func TestDeviationText(t *testing.T) {
	for _, c := range []struct {
		measured, predicted float64
		want                string
	}{
		{0.79, 1, "-21.0%"},
		{1.05, 1, "5.0%"},
		{0.027, 0.004, "0.02 (absolute)"},
		{0.03, 0, "0.03 (absolute)"},
		{0, 0, "0.00 (absolute)"},
	} {
		if got := deviationText(c.measured, c.predicted); got != c.want {
			t.Errorf("deviationText(%g, %g) = %q, want %q", c.measured, c.predicted, got, c.want)
		}
	}
}
