package enginetest

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Attempts is how many times Measure measures before it fails a test.
const Attempts = 2

// Measure runs a measurement on the real engine, at most Attempts times.
// These machines are shared: a burst of other work can spoil one
// measurement of what the kernel does, and the tests claim what the kernel
// does when the host lets it. So the first attempt whose checks all hold
// ends it; a spoiled attempt's failures are logged, not hidden, and the
// test fails with every attempt's failures if none holds. body takes the
// attempt in place of the test: its Error, Fatal and Fail record a
// failure of that attempt (Fatal ends it), the rest is the test's own.
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
			return
		}
		msg := fmt.Sprintf("%s, attempt %d of %d: %s", what, i, Attempts, strings.Join(a.errs, "; "))
		failed = append(failed, msg)
		if i < Attempts {
			t.Logf("%s (measuring again)", msg)
		}
	}
	t.Fatalf("%s failed in every attempt:\n%s", what, strings.Join(failed, "\n"))
}

// attempt is one try of a measurement: its failures are its own.
type attempt struct {
	testing.TB
	mu   sync.Mutex
	errs []string
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
