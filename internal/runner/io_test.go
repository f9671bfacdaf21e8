package runner_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/moby/moby/client"
)

// TestWriteBandwidthLimit writes with O_DIRECT under --device-write-bps on
// the disk under the engine's data root.
func TestWriteBandwidthLimit(t *testing.T) {
	m := newTestManager(t)
	eng, _, host := realEngine(t)
	if host.DataRootDevice == "" {
		t.Fatalf("no data root device: %s", host.DataRootNote)
	}
	if !host.IOThrottle().Supported {
		t.Fatalf("this engine reports no throttle support: %s", host.IOThrottle().Reason)
	}
	r := startSpec(t, m, `{"name": "write bps", "duration": "60s",
	  "lanes": [{"name": "5mb", "workload": {"kind": "disk-write", "mb": 20}, "limits": {"device-write-bps": "auto:5mb"}}]}`)
	v := waitDone(t, r, 2*time.Minute)
	l := v.Lanes[0]
	if v.State != runner.StateDone || l.ExitCode == nil || *l.ExitCode != 0 {
		t.Fatalf("state %s, lane %+v", v.State, l)
	}
	want := specs.DeviceRate{Path: host.DataRootDevice, Rate: 5 << 20}
	if l.Applied == nil || l.Applied.WriteBps != want {
		t.Errorf("applied write bps %+v, want %+v (read back from inspect)", l.Applied, want)
	}
	if !strings.Contains(l.DockerRun, "--device-write-bps "+host.DataRootDevice+":5m") {
		t.Errorf("docker run %q", l.DockerRun)
	}
	t.Logf("measured %.2f MiB/s under a 5 MiB/s limit", l.Throughput)
	if math.Abs(l.Throughput/5-1) > 0.15 {
		t.Errorf("throughput %.2f MiB/s, want 5 within 15%%", l.Throughput)
	}
	vols, err := eng.VolumeList(context.Background(), client.VolumeListOptions{Filters: make(client.Filters).Add("label", engine.LabelRun+"="+r.ID())})
	if err != nil || len(vols.Items) != 0 {
		t.Errorf("volumes of the run remain: %v %v", vols.Items, err)
	}
}

func TestUnknownDeviceIsAFieldError(t *testing.T) {
	_, _, host := realEngine(t)
	before := labelled(t, "")
	spec, errs := experiments.Parse([]byte(`{"lanes": [{"workload": {"kind": "disk-write"}, "limits": {"device-write-bps": "/dev/nosuchdisk:5mb"}}]}`))
	if errs != nil {
		t.Fatal(errs)
	}
	_, errs = experiments.Validate(spec, host.Experiments())
	if len(errs) != 1 || errs[0].Lane != 0 || errs[0].Field != "device-write-bps" || !strings.Contains(errs[0].Message, "no such device") {
		t.Errorf("errors %v", errs)
	}
	if after := labelled(t, ""); after != before {
		t.Errorf("labelled containers went from %d to %d", before, after)
	}
}

// TestPhases starts and stops a lane at its offsets, and reports each
// lane's throughput per phase.
func TestPhases(t *testing.T) {
	m := newTestManager(t)
	r := startSpec(t, m, `{"name": "phases", "mode": "parallel", "duration": "20s", "lanes": [
	  {"name": "steady", "workload": {"kind": "spin", "seconds": 9}, "limits": {"cpus": "0.5"}},
	  {"name": "middle", "workload": {"kind": "spin", "seconds": 60}, "start_at": "3s", "stop_at": "6s"}]}`)
	v := waitDone(t, r, time.Minute)
	mid := v.Lanes[1]
	t.Logf("middle lane ran %.2fs to %.2fs", mid.StartedAt, mid.EndedAt)
	interval := float64(v.IntervalMs) / 1000
	// The runner asks ahead by the engine's start latency, so the lane may
	// also start a little early.
	if math.Abs(mid.StartedAt-3) > 2*interval {
		t.Errorf("started at %.2fs, want 3s within a sample or two", mid.StartedAt)
	}
	if mid.EndedAt < 6 || mid.EndedAt > 6+2*interval {
		t.Errorf("ended at %.2fs, want 6s within a sample or two", mid.EndedAt)
	}
	if mid.ExitCode == nil || *mid.ExitCode != 0 || mid.TimedOut || mid.Result == "" && mid.Throughput == 0 {
		t.Errorf("middle lane: exit %v, timed out %v: it should stop cleanly at stop_at", mid.ExitCode, mid.TimedOut)
	}
	if fmt := v.PhaseBounds; len(fmt) != 2 || fmt[0] != 3 || fmt[1] != 6 {
		t.Errorf("phase bounds %v", v.PhaseBounds)
	}
	steady := v.Lanes[0]
	if len(steady.Phases) != 3 || len(mid.Phases) != 1 {
		t.Fatalf("phases: steady %+v, middle %+v", steady.Phases, mid.Phases)
	}
	for _, p := range steady.Phases {
		if p.Throughput <= 0 {
			t.Errorf("steady lane's %s has no throughput: %+v", p.Name, p)
		}
	}
}
