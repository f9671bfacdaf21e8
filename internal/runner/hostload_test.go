package runner

import (
	"testing"
	"time"
)

// An engine process is read at every tick while its CPU moves, and once
// a second while it rests; one not read yet is read at once.
func TestAnEngineProcessRests(t *testing.T) {
	t0 := time.Now()
	p := &engineProc{ns: noReading}
	if !p.due(t0) {
		t.Fatal("a process not read yet is not due")
	}
	p.ns, p.readAt, p.moved = 10, t0, true
	if !p.due(t0.Add(250 * time.Millisecond)) {
		t.Error("a moving process is not due at the next tick")
	}
	p.moved = false
	if p.due(t0.Add(250 * time.Millisecond)) {
		t.Error("a resting process is due at the next tick")
	}
	if !p.due(t0.Add(restEvery)) {
		t.Errorf("a resting process is not due after %s", restEvery)
	}
}
