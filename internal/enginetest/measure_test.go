package enginetest

import (
	"strings"
	"testing"
)

// An attempt's failures are its own: a spoiled first attempt leaves the
// test passing when the second holds, and Fatal ends only the attempt.
func TestMeasureMeasuresAgain(t *testing.T) {
	var tries, after int
	Measure(t, "twice", func(a testing.TB) {
		tries++
		if tries == 1 {
			a.Fatalf("spoiled")
			after++ // not reached: Fatalf ends the attempt
		}
	})
	if tries != 2 || after != 0 || t.Failed() {
		t.Fatalf("tries %d, after %d, failed %v", tries, after, t.Failed())
	}
}

// Every attempt failing fails the test, naming each attempt's failure.
func TestMeasureFailsWhenNoAttemptHolds(t *testing.T) {
	inner := &attempt{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Measure(inner, "never", func(a testing.TB) { a.Errorf("off by %d", 1) })
	}()
	<-done
	if !inner.Failed() || len(inner.errs) != 1 {
		t.Fatalf("errs %q", inner.errs)
	}
	for _, want := range []string{"attempt 1 of 3: off by 1", "attempt 3 of 3: off by 1"} {
		if !strings.Contains(inner.errs[0], want) {
			t.Errorf("%q lacks %q", inner.errs[0], want)
		}
	}
}

// A spoiled attempt's cleanups run before the next attempt begins; the
// attempt that held keeps what it made until the test ends.
func TestEachAttemptOwnsItsCleanups(t *testing.T) {
	var log []string
	t.Run("measured", func(t *testing.T) {
		tries := 0
		Measure(t, "twice", func(a testing.TB) {
			tries++
			n := tries
			log = append(log, "begin "+string(rune('0'+n)))
			a.Cleanup(func() { log = append(log, "clean "+string(rune('0'+n))) })
			if n == 1 {
				a.Fatalf("spoiled")
			}
		})
		log = append(log, "after Measure")
	})
	want := "begin 1, clean 1, begin 2, after Measure, clean 2"
	if got := strings.Join(log, ", "); got != want {
		t.Errorf("%s, want %s", got, want)
	}
}
