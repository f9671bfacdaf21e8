package runner

import (
	"testing"
	"time"
)

func TestJitterQuantiles(t *testing.T) {
	var j jitter
	if j.view(50*time.Millisecond) != nil {
		t.Fatal("a view of no intervals")
	}
	want := 50 * time.Millisecond
	for i := range 98 {
		j.add(want+time.Duration(i%3)*100*time.Microsecond, want) // 0, 0.1, 0.2 ms late
	}
	j.add(want-3*time.Millisecond, want) // early counts as an error too
	j.add(want+250*time.Millisecond, want)
	v := j.view(want)
	if v.Intervals != 100 || v.ErrorP50Ms != 0.2 || v.ErrorP99Ms != 3.1 || v.ErrorMaxMs != 250 {
		t.Errorf("view %+v", v)
	}
}
