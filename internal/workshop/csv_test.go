package workshop

import "testing"

func TestCSVTextNeutralisesFormulas(t *testing.T) {
	tests := []struct{ in, want string }{
		{`=HYPERLINK("http://x")`, `'=HYPERLINK("http://x")`},
		{"+1", "'+1"},
		{"-1", "'-1"},
		{"@SUM(A1)", "'@SUM(A1)"},
		{"\tx", "'\tx"},
		{"lane 1", "lane 1"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := csvText(tt.in); got != tt.want {
			t.Errorf("csvText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
