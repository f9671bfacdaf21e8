package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
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

// hostLoad.read counts an engine process's CPU at every tick while it
// moves; once it rests it is not read until restEvery has passed, and
// what it did meanwhile is counted then. The /proc it reads is a tree of
// the test's own.
func TestReadRestsAnIdleEngineProcess(t *testing.T) {
	root := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dockerd := func(utime int) {
		write("4242/stat", fmt.Sprintf("4242 (dockerd) S 1 1 1 0 -1 0 0 0 0 0 %d 50 0 0 20 0 1 0\n", utime))
	}
	write("stat", "cpu  100 0 100 1000 0 0 0 0 0 0\n")
	dockerd(100)
	h := newHostLoad([]int{4242}, 250*time.Millisecond)
	h.proc.Close()
	h.proc = engine.NewProcReader(root)
	defer h.close()
	const tick = uint64(1e9 / 100) // /proc's USER_HZ
	engineNs := func(what string, want uint64) {
		t.Helper()
		r, ok := h.read()
		if !ok {
			t.Fatalf("%s: no reading", what)
		}
		if r.engine != want {
			t.Errorf("%s: the engine's CPU %d ns, want %d", what, r.engine, want)
		}
	}
	engineNs("the first reading", 0)
	engineNs("unmoved", 0)
	dockerd(110)
	engineNs("moved while resting, within the second", 0)
	h.engine[4242].readAt = h.engine[4242].readAt.Add(-restEvery)
	engineNs("a second after it rested", 10*tick)
	dockerd(130)
	engineNs("moving: read at the next tick", 30*tick)
}
