//go:build k8s

package kube_test

import (
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/runner"
)

// A pod still running at the run's duration is killed, and its lane says
// it timed out; the run is done, not failed. Its pod is deleted with the
// least grace the API server has, so that kubelet stops the container and
// reports its end before the pod goes: a pod removed at once would leave
// its lane with no exit to report.
func TestAPodPastTheDurationTimesOut(t *testing.T) {
	m, cs := cluster(t)
	r := submit(t, m, `{"mode": "parallel", "duration": "3s", "lanes": [
		{"name": "too long", "workload": {"kind": "spin", "threads": 1, "seconds": 120}, "limits": {"cpus": "0.2", "memory": "64m"}}]}`)
	v := enginetest.WaitDone(t, r, 2*time.Minute)
	if v.State != runner.StateDone {
		t.Fatalf("run %s: %s", v.State, v.Error)
	}
	l := v.Lanes[0]
	t.Logf("lane %s: exit %s, timed out %v, ran %.2f–%.2f s, error %q", l.Name, exitText(l.ExitCode), l.TimedOut, l.StartedAt, l.EndedAt, l.Error)
	if !l.TimedOut || l.Error != "" || l.ExitCode == nil {
		t.Errorf("lane %s: timed out %v, exit %s, error %q: want timed out with its exit", l.Name, l.TimedOut, exitText(l.ExitCode), l.Error)
	}
	if ran := l.EndedAt - l.StartedAt; ran > 30 {
		t.Errorf("the lane ran %.0f s of a run of 3 s", ran)
	}
	if n := leftPods(t, cs, v.ID); n != 0 {
		t.Errorf("%d pods of the run left", n)
	}
}
