package runner

import (
	"testing"
	"time"
)

// TestOneTickerForAllRuns: every subscriber gets the same instants from one
// timer, which runs only while someone listens.
func TestOneTickerForAllRuns(t *testing.T) {
	k := newTicker()
	a, stopA := k.subscribe(5 * time.Millisecond)
	b, stopB := k.subscribe(5 * time.Millisecond)
	for range 3 {
		ta, tb := <-a, <-b
		if !ta.Equal(tb) {
			t.Fatalf("two runs ticked at %v and %v", ta, tb)
		}
	}
	stopA()
	stopA() // ending twice is harmless
	if n := k.subscribers(); n != 1 {
		t.Fatalf("%d subscribers after one left", n)
	}
	<-b
	stopB()
	k.mu.Lock()
	running := k.stop != nil
	k.mu.Unlock()
	if running {
		t.Error("the timer runs with nobody subscribed")
	}
	c, stopC := k.subscribe(5 * time.Millisecond) // and starts again
	defer stopC()
	select {
	case <-c:
	case <-time.After(time.Second):
		t.Fatal("no tick after subscribing again")
	}
}
