package runner_test

import (
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/runner"
)

// TestFastSampling samples four lanes every 50 ms: the samples come at
// that interval, and the run reports how far they strayed from it (the
// figure goes in docs/benchmarks.md; it is not asserted, the host being
// shared).
func TestFastSampling(t *testing.T) {
	m := newTestManager(t)
	r := startSpec(t, m, `{"name": "fast", "duration": "30s", "interval": "50ms", "lanes": [
	  {"name": "a", "workload": {"kind": "spin", "seconds": 8}, "limits": {"cpus": "0.25"}},
	  {"name": "b", "workload": {"kind": "spin", "seconds": 8}, "limits": {"cpus": "0.25"}},
	  {"name": "c", "workload": {"kind": "spin", "seconds": 8}, "limits": {"cpu-quota": "25000", "cpu-period": "100000"}},
	  {"name": "d", "workload": {"kind": "spin", "seconds": 8}, "limits": {"cpus": "0.25"}}]}`)
	v := waitDone(t, r, time.Minute)
	if v.State != runner.StateDone || v.IntervalMs != 50 {
		t.Fatalf("state %s, interval %d ms: %s", v.State, v.IntervalMs, v.Error)
	}
	s := v.Sampling
	// Four lanes for about 8 s at 20 samples a second.
	if s == nil || s.IntervalMs != 50 || s.Intervals < 4*8*20*8/10 {
		t.Fatalf("sampling %+v", s)
	}
	enginetest.Figure(t, "sampling every 50 ms, 4 lanes: interval error p50 / p99 / max", "%.1f / %.1f / %.1f ms over %d intervals", s.ErrorP50Ms, s.ErrorP99Ms, s.ErrorMaxMs, s.Intervals)
}
