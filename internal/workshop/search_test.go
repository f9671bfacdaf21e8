package workshop

import (
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/experiments/finder"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workload/wire"
)

// TestFakeSearchTransitions covers every (state, event) pair: a running
// search ends as each event says, and an ended one stays as it ended.
func TestFakeSearchTransitions(t *testing.T) {
	events := map[searchEvent]string{searchAnswered: "answered", searchFailed: "failed", searchPastDeadline: "past its deadline", searchStopped: "stopped"}
	want := map[searchEvent]SearchState{searchAnswered: SearchDone, searchFailed: SearchFailed, searchPastDeadline: SearchFailed, searchStopped: SearchStopped}
	for _, from := range []SearchState{SearchRunning, SearchDone, SearchFailed, SearchStopped} {
		for e, name := range events {
			got, moved := from.transition(e)
			switch {
			case from == SearchRunning && (!moved || got != want[e]):
				t.Errorf("running, %s: %s (moved %v), want %s", name, got, moved, want[e])
			case from != SearchRunning && (moved || got != from):
				t.Errorf("%s, %s: %s (moved %v), want it to stay %s", from, name, got, moved, from)
			}
		}
	}
}

// probeRun is a probe run of a service and its load, as a test writes it.
func probeRun(svc, load runner.LaneResult) runner.RunView {
	svc.Name, load.Name = finder.ProbeService, finder.ProbeLoad
	return runner.RunView{ID: "r1", State: runner.StateDone, Lanes: []runner.LaneResult{svc, load}}
}

func exit(code int) *int { return &code }

// TestFakeServiceDied covers each way a probe's service fails to serve
// its load, and the ways it did serve.
func TestFakeServiceDied(t *testing.T) {
	for _, tc := range []struct {
		name      string
		svc, load runner.LaneResult
		want      string
	}{
		{"served", runner.LaneResult{ExitCode: exit(0), EndedAt: 9}, runner.LaneResult{ExitCode: exit(0), EndedAt: 8}, ""},
		{"OOM killed", runner.LaneResult{OOMKilled: true, ExitCode: exit(137), EndedAt: 3}, runner.LaneResult{ExitCode: exit(1), EndedAt: 8}, "OOM killed"},
		{"exited before its load ended", runner.LaneResult{ExitCode: exit(2), EndedAt: 3}, runner.LaneResult{ExitCode: exit(1), EndedAt: 8}, "exited (2) before its load ended"},
		{"exited on its own after its load", runner.LaneResult{ExitCode: exit(2), EndedAt: 9}, runner.LaneResult{ExitCode: exit(1), EndedAt: 8}, ""},
		{"stopped when its time ran out", runner.LaneResult{ExitCode: exit(2), EndedAt: 3, TimedOut: true}, runner.LaneResult{ExitCode: exit(1), EndedAt: 8}, ""},
		{"its load failed, the service did not", runner.LaneResult{ExitCode: exit(0), EndedAt: 9}, runner.LaneResult{ExitCode: exit(1), EndedAt: 8}, ""},
		{"never answered", runner.LaneResult{ExitCode: exit(0), EndedAt: 9}, runner.LaneResult{ExitCode: exit(1), EndedAt: 8, Failure: wire.FailureUnanswered, Error: "workload: target http://10.0.0.1:8080/ did not answer within 20s"}, "never answered"},
		{"a load that failed otherwise", runner.LaneResult{ExitCode: exit(0), EndedAt: 9}, runner.LaneResult{ExitCode: exit(1), EndedAt: 8, Error: "the service did not answer within 10s"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := serviceDied(probeRun(tc.svc, tc.load))
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("serviceDied = %q, want %q", got, tc.want)
			}
		})
	}
	if got := serviceDied(runner.RunView{Lanes: []runner.LaneResult{{Name: "other"}}}); got != "" {
		t.Errorf("a run that is no probe: %q", got)
	}
}

// TestFakeProbeResult reads a probe's p99, failed share and throttled
// share, and refuses a probe that measured no latency.
func TestFakeProbeResult(t *testing.T) {
	svc := runner.LaneResult{Workload: specs.Workload{Kind: specs.KindHTTP, GOMAXPROCS: "1"}, ThrottledSeconds: 2}
	load := runner.LaneResult{Requests: 200, Failures: 10, WallSeconds: 8, LatencyMs: &wire.Latency{P99: 42}}
	r, err := probeResult(probeRun(svc, load), 2)
	if err != nil || r.P99Ms != 42 || r.ErrorsPct != 5 || r.Throttled != 0.25 || r.Run != "r1" {
		t.Errorf("probeResult = %+v, %v; want p99 42 ms, 5%% failed, 0.25 throttled (2 s of one thread's 8)", r, err)
	}
	svc.Workload = specs.Workload{Kind: specs.KindImage}
	if r, _ := probeResult(probeRun(svc, load), 2); r.Throttled != 0.125 {
		t.Errorf("a facilitator's service, which may run a thread a CPU: throttled %v, want 0.125", r.Throttled)
	}
	load.LatencyMs = nil
	if _, err := probeResult(probeRun(svc, load), 2); err == nil || !strings.Contains(err.Error(), "no latency") {
		t.Errorf("a probe without latency: %v", err)
	}
}
