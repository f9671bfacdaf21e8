package runner

import (
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/workload/wire"
)

// A lane whose workload stops reporting while it runs (its log stream
// lost) has samples with no throughput, saying so, rather than its last
// figure repeated; the lane keeps when the reports stopped, and loses it
// once they come again.
func TestALaneWhoseReportsStopSaysSo(t *testing.T) {
	start := time.Now().Add(-40 * time.Second)
	l := &laneState{}
	l.progressed(wire.Progress{Rate: 190, Latency: &wire.Latency{P99: 3}})
	l.reportedAt = start.Add(32 * time.Second) // the last report, at 32 s
	var jit jitter
	read := func(at time.Duration) engine.Sample {
		t.Helper()
		c := engine.Counters{At: start.Add(at), CPUNs: uint64(at)}
		j := &sampleJob{asked: c.At, c: c}
		s, _, ok := l.record(j, start, false, &jit, 100*time.Millisecond)
		if !ok && l.hasPrev && at > 30*time.Second {
			t.Fatalf("no sample at %v", at)
		}
		return s
	}
	read(30 * time.Second)
	if s := read(35 * time.Second); s.Stalled || s.Throughput != 190 {
		t.Errorf("3 s after the last report: stalled %v, throughput %v; want the last figure", s.Stalled, s.Throughput)
	}
	s := read(38 * time.Second)
	if !s.Stalled || s.Throughput != 0 || s.LatencyMs != nil {
		t.Errorf("6 s after the last report: stalled %v, throughput %v, latency %v; want no figure, stalled", s.Stalled, s.Throughput, s.LatencyMs)
	}
	if v := l.result(0, specs.PlannedLane{Name: "load"}); v.ProgressStoppedAt != 32 {
		t.Errorf("the lane says its reports stopped at %v s, want 32", v.ProgressStoppedAt)
	}
	l.progressed(wire.Progress{Rate: 180})
	if s := read(38500 * time.Millisecond); s.Stalled || s.Throughput != 180 {
		t.Errorf("reports again: stalled %v, throughput %v", s.Stalled, s.Throughput)
	}
	if v := l.result(0, specs.PlannedLane{Name: "load"}); v.ProgressStoppedAt != 0 {
		t.Errorf("reports came again, yet the lane says they stopped at %v s", v.ProgressStoppedAt)
	}
}
