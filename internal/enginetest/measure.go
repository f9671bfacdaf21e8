package enginetest

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/runner"
)

// Attempts is how many times Measure measures before it fails a test.
const Attempts = 3

// Measure runs a measurement on the real engine, at most Attempts times.
// These machines are shared: a burst of other work can spoil one
// measurement of what the kernel does, and the tests claim what the kernel
// does when the host lets it. So the first attempt whose checks all hold
// ends it; a spoiled attempt's failures are logged, not hidden, and the
// test fails with every attempt's failures if none holds.
//
// body takes the attempt in place of the test: its Error, Fatal and Fail
// record a failure of that attempt (Fatal ends it), and its Cleanup
// belongs to the attempt: a spoiled attempt's cleanups run as soon as it
// ends, before the next begins; the attempt that held keeps what it made
// until the test ends. body holds the measured figures' checks only: the
// checks that are not measured (a leak, a page's text) follow Measure,
// once, on what the attempt that held left.
func Measure(t testing.TB, what string, body func(t testing.TB)) {
	t.Helper()
	var failed []string
	for i := 1; i <= Attempts; i++ {
		a := &attempt{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			body(a)
		}()
		<-done
		if !a.Failed() {
			if i > 1 {
				t.Logf("%s: attempt %d of %d held after %d spoiled", what, i, Attempts, i-1)
			}
			t.Cleanup(a.cleanup)
			return
		}
		a.cleanup()
		msg := fmt.Sprintf("%s, attempt %d of %d: %s", what, i, Attempts, strings.Join(a.errs, "; "))
		failed = append(failed, msg)
		t.Logf("%s; the host's busiest processes now: %s", msg, Busiest(time.Second, 5))
		if i < Attempts {
			t.Logf("(measuring again)")
		}
	}
	t.Fatalf("%s failed in every attempt:\n%s", what, strings.Join(failed, "\n"))
}

// attempt is one try of a measurement: its failures and its cleanups are
// its own.
type attempt struct {
	testing.TB
	mu       sync.Mutex
	errs     []string
	cleanups []func()
}

func (a *attempt) Cleanup(f func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cleanups = append(a.cleanups, f)
}

// cleanup runs the attempt's cleanups, the last registered first.
func (a *attempt) cleanup() {
	a.mu.Lock()
	fs := a.cleanups
	a.cleanups = nil
	a.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

func (a *attempt) record(msg string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.errs = append(a.errs, strings.TrimSpace(msg))
	a.TB.Log("attempt: " + strings.TrimSpace(msg))
}

func (a *attempt) Errorf(format string, args ...any) { a.record(fmt.Sprintf(format, args...)) }
func (a *attempt) Error(args ...any)                 { a.record(fmt.Sprintln(args...)) }
func (a *attempt) Fail()                             { a.record("failed") }

func (a *attempt) Fatalf(format string, args ...any) {
	a.record(fmt.Sprintf(format, args...))
	runtime.Goexit()
}

func (a *attempt) Fatal(args ...any) {
	a.record(fmt.Sprintln(args...))
	runtime.Goexit()
}

func (a *attempt) FailNow() {
	a.record("failed")
	runtime.Goexit()
}

func (a *attempt) Failed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.errs) > 0
}

// CheckSteps asserts that a guided lab's steps were all ticked while it
// ran, each after the one before it; on emulated CPUs it only logs them.
func CheckSteps(t testing.TB, v runner.RunView) {
	t.Helper()
	prev := 0.0
	for _, s := range v.Steps {
		t.Logf("step %d: %s, %s, value %.3f, done at %.1fs", s.Index+1, s.State, s.Check, s.Value, s.DoneAt)
		if EmulatedCPU() {
			continue
		}
		if s.State != runner.StepDone || s.DoneAt < prev {
			t.Errorf("step %d (%s): %s at %.1fs, value %.3f, after step %d at %.1fs", s.Index+1, s.Check, s.State, s.DoneAt, s.Value, s.Index, prev)
		}
		prev = s.DoneAt
	}
}

// Samples are a run's samples so far, as its hub keeps them.
func Samples(t testing.TB, r *runner.Run) []engine.Sample {
	t.Helper()
	var out []engine.Sample
	for _, b := range r.Hub().History() {
		var msg runner.Message
		if err := json.Unmarshal(b, &msg); err != nil {
			t.Fatal(err)
		}
		out = append(out, msg.Samples...)
	}
	return out
}

// Unheld names the flags whose files do not show what they should: a flag
// holds when each of its files does, or, for a flag that writes one of
// several files (Either), when any of them does.
func Unheld(rs []engine.KernelReading) []string {
	var order []string
	held := map[string]bool{}
	for _, r := range rs {
		if _, seen := held[r.Flag]; !seen {
			order = append(order, r.Flag)
			held[r.Flag] = !r.Either
		}
		if r.Either {
			held[r.Flag] = held[r.Flag] || r.Holds
		} else {
			held[r.Flag] = held[r.Flag] && r.Holds
		}
	}
	var out []string
	for _, f := range order {
		if !held[f] {
			out = append(out, f)
		}
	}
	return out
}
