//go:build k8s

package kube_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
)

// k8s-resize: a Go service's pod resized in place from limits.cpu 500m to
// 1500m while it serves. The resize is done by kubelet with no restart,
// the container's quota file reads back the new limit, the prediction
// follows, and the lab's guided steps tick: throttled and slow before,
// neither after. Refusals come first, on the same lane: a change of its
// QoS class and a Docker-only flag. The throttling and latency steps are
// measured figures the shared host can spoil, so the run is measured
// again if they fail; the resize's own checks are not.
func TestResizeInPlaceLab(t *testing.T) {
	m, cs := cluster(t)
	var v runner.RunView
	var rec runner.ChangeRecord
	var took time.Duration
	var run *runner.Run
	enginetest.Measure(t, "the k8s-resize lab's steps", func(t testing.TB) {
		lab, _ := experiments.LabByID("k8s-resize")
		spec := lab.LabSpec()
		p, errs := m.Pool().Validate(spec)
		if errs != nil {
			t.Fatal(errs)
		}
		r, err := m.SubmitFrom(spec, p, "", "")
		if err != nil {
			t.Fatal(err)
		}
		run = r
		enginetest.WaitFor(t, 2*time.Minute, "the lab's first two steps", func() bool {
			v := r.View()
			return v.Ended || len(v.Steps) > 1 && v.Steps[1].State == runner.StepDone
		})
		if v := r.View(); v.Ended {
			for _, l := range v.Lanes {
				t.Logf("lane %s: %s, exit %s, error %q, %.2f cores, throttled %.2f s", l.Name, l.State, exitText(l.ExitCode), l.Error, l.MeasuredCores, l.ThrottledSeconds)
			}
			for _, s := range v.Steps {
				t.Logf("step %d: %s, %s, value %.3f, full %v", s.Index+1, s.State, s.Check, s.Value, s.Full)
			}
			t.Fatalf("the run ended before its first two steps: %s: %s", v.State, v.Error)
		}
		ctx := context.Background()
		for _, c := range []struct {
			change      specs.Limits
			field, says string
		}{
			{specs.Limits{Resources: &specs.PodResources{Requests: specs.PodResourceList{CPU: "500m", Memory: "64Mi"}}}, "resources", "QoS class"},
			{specs.Limits{PidsLimit: "100"}, "pids-limit", "podPidsLimit"},
		} {
			_, err := m.Changes().UpdateLimits(ctx, r.ID(), 0, c.change)
			var errs specs.Errors
			if !errors.As(err, &errs) || errs[0].Lane != 0 || errs[0].Field != c.field || !strings.Contains(errs[0].Message, c.says) {
				t.Errorf("change %+v: got %v, want an error on %s saying %q", c.change, err, c.field, c.says)
			}
		}
		start := time.Now()
		rec, err = m.Changes().UpdateLimits(ctx, r.ID(), 0, specs.Limits{Resources: &specs.PodResources{Limits: specs.PodResourceList{CPU: "1500m"}}})
		took = time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		v = enginetest.WaitDone(t, r, 2*time.Minute)
		enginetest.CheckSteps(t, v)
	})
	rz, applied := settledResize(t, v, rec, took)
	if enginetest.EmulatedCPU() && rz != nil && rz.State == engine.ResizeInProgress && rz.Restarts == 0 {
		// The emulated node starts the lab's pods late (its first step
		// once came at 38 s, against 22 s), so the resize comes late in
		// the service's life, and its kubelet has not always applied it
		// before the service ended: logged, as the node's CPU verdicts
		// are. What the run leaves is checked all the same.
		svc := v.Lanes[0]
		t.Logf("on emulated CPUs, logged, not required: the resize sent at %.1f s was still in progress when the service ended (%s); the service ran %.1f–%.1f s",
			rec.AtSeconds, rz.Message, svc.StartedAt, svc.EndedAt)
		if n := leftPods(t, cs, v.ID); n != 0 {
			t.Errorf("%d pods of the run left", n)
		}
		return
	}
	if rz == nil || rz.State != engine.ResizeDone || rz.Restarts != 0 || rz.Applied.Limits.CPU != "1500m" || rz.QoS != specs.QoSBurstable {
		t.Fatalf("the resize: %+v", rz)
	}
	if !strings.Contains(rz.Command, "--subresource resize") {
		t.Errorf("the command shown: %q", rz.Command)
	}
	if applied.NanoCPUs != 15e8 {
		t.Errorf("applied after the resize: %+v", applied)
	}
	checkReportsToTheEnd(t, run, v.Lanes[1])
	checkResizedService(t, v.Lanes[0])
	if n := leftPods(t, cs, v.ID); n != 0 {
		t.Errorf("%d pods of the run left", n)
	}
	t.Logf("figure: k8s-resize (limits.cpu 500m → 1500m) | kubelet done, cgroup quota read back, in %.2f s; restarts 0; GOMAXPROCS 2 throughout", took.Seconds())
	for _, s := range v.Steps {
		t.Logf("figure: k8s-resize step %d (%s) | %.2f", s.Index+1, s.Check, s.Value)
	}
}

// checkResizedService: the service lane l, resized to limits.cpu 1500m,
// has its quota file, its pod and its GOMAXPROCS as the resize left them.
func checkResizedService(t *testing.T, l runner.LaneResult) {
	t.Helper()
	checkKernel(t, l)
	quota := ""
	for _, f := range l.Kernel.Files {
		if f.File == "cpu.cfs_quota_us" || f.File == "cpu.max" {
			quota = f.Got
		}
	}
	if !strings.Contains(quota, "150000") {
		t.Errorf("the container's quota after the resize: %q, want 150000 µs", quota)
	}
	if l.Pod == nil || l.Pod.LimitMilliCPU != 1500 {
		t.Errorf("the lane's pod after the resize: %+v", l.Pod)
	}
	if l.GOMAXPROCS != 2 {
		t.Errorf("GOMAXPROCS %d, want 2 (Go's floor at 500m, 1500m rounded up)", l.GOMAXPROCS)
	}
}

// settledResize is what the run's record of the resize rec (answered
// after took) came to by the run's end, and the lane's limits then: a
// resize kubelet had not settled when the change was answered is followed
// by the run to the end, and its record says what it came to, and when.
func settledResize(t *testing.T, v runner.RunView, rec runner.ChangeRecord, took time.Duration) (*runner.ResizeRecord, specs.Resources) {
	t.Helper()
	var rz *runner.ResizeRecord
	applied := rec.Applied
	for _, c := range v.Changes {
		if c.Resize != nil && c.AtSeconds == rec.AtSeconds {
			rz, applied = c.Resize, c.Applied
		}
	}
	if rz != nil && rec.Resize.State != engine.ResizeDone {
		t.Logf("the resize sent at %.1f s was %s when answered after %.1f s (%s); at the end: %s, settled at %.1f s",
			rec.AtSeconds, rec.Resize.State, took.Seconds(), rec.Resize.Message, rz.State, rz.SettledAt)
		if rz.State == engine.ResizeDone && rz.SettledAt <= rec.AtSeconds {
			t.Errorf("a resize settled after the answer says it settled at %.1f s", rz.SettledAt)
		}
	}
	return rz, applied
}

// On the node with the static CPU manager a Guaranteed pod of whole CPUs
// has CPUs of its own, which kubelet does not resize: the change is
// refused before the pod is patched, saying why, and the lane keeps its
// limits.
func TestResizeRefusedForCPUsOfItsOwn(t *testing.T) {
	if !staticCluster() {
		t.Fatal("this test wants the cluster k8s/run.sh starts with the static CPU manager (LIMITLAB_K8S_CPU_POLICY=static)")
	}
	m, _ := cluster(t)
	r := submit(t, m, `{"mode": "parallel", "duration": "30s", "lanes": [
		{"name": "own", "workload": {"kind": "spin", "seconds": 20}, "resources": {"limits": {"cpu": "1", "memory": "64Mi"}}}]}`)
	enginetest.WaitFor(t, time.Minute, "the lane's pod to run", func() bool { return r.View().Lanes[0].State == runner.LaneRunning })
	_, err := m.Changes().UpdateLimits(context.Background(), r.ID(), 0, specs.Limits{Resources: &specs.PodResources{
		Requests: specs.PodResourceList{CPU: "2"}, Limits: specs.PodResourceList{CPU: "2"}}})
	var errs specs.Errors
	if !errors.As(err, &errs) || errs[0].Field != "resources" || !strings.Contains(errs[0].Message, "static CPU manager") {
		t.Errorf("got %v, want the resize refused for the pod's CPUs of its own", err)
	}
	t.Logf("refused: %v", err)
	r.Stop()
	v := enginetest.WaitDone(t, r, 2*time.Minute)
	if l := v.Lanes[0]; l.Pod == nil || l.Pod.ExclusiveCPUs != 1 || len(v.Changes) != 0 {
		t.Errorf("after the refusal: pod %+v, changes %+v", l.Pod, v.Changes)
	}
}

// A memory limit resized down while the container holds 96 MiB: first
// to 112Mi, above what it uses, then to 64Mi, below. kubelet's word on
// each, and what then became of the lane, are logged as this node's cgroup
// version treats them. Either kubelet refuses a change (the lane keeps its
// limit, the server puts the spec back, and the refusal gives kubelet's
// reason) or applies it, and the kernel then reclaims or OOM-kills the
// container: the test asserts that the lane agrees with whichever
// happened.
func TestAMemoryResizeBelowUsage(t *testing.T) {
	m, _ := cluster(t)
	r := submit(t, m, `{"mode": "parallel", "duration": "40s", "lanes": [
		{"name": "holder", "workload": {"kind": "mem", "mb": 96, "rate_mb_s": 96, "seconds": 20},
		 "resources": {"requests": {"cpu": "100m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}}}]}`)
	enginetest.WaitFor(t, time.Minute, "the lane holding its 96 MiB", func() bool {
		if r.View().Ended {
			return true
		}
		for _, s := range enginetest.Samples(t, r) {
			if s.MemMiB > 90 {
				return true
			}
		}
		return false
	})
	if v := r.View(); v.Ended {
		t.Fatalf("the run ended first: %s: %s", v.State, v.Error)
	}
	limit := int64(128 << 20)
	for _, to := range []int64{112, 64} {
		rec, err := m.Changes().UpdateLimits(context.Background(), r.ID(), 0, specs.Limits{Resources: &specs.PodResources{
			Limits: specs.PodResourceList{Memory: specs.Value(strconv.FormatInt(to, 10) + "Mi")}}})
		var errs specs.Errors
		switch {
		case errors.As(err, &errs):
			t.Logf("figure: a memory resize %dMi → %dMi with 96 MiB in use | refused: %s", limit>>20, to, errs[0].Message)
		case err != nil:
			t.Fatal(err)
		default:
			t.Logf("figure: a memory resize %dMi → %dMi with 96 MiB in use | %s %s", limit>>20, to, rec.Resize.State, rec.Resize.Message)
			if rec.Resize.State == engine.ResizeDone {
				limit = to << 20
			}
		}
		if l := r.View().Lanes[0]; !l.OOMKilled && l.State == runner.LaneRunning && (l.Pod == nil || l.Pod.LimitMemory != limit) {
			t.Errorf("after the resize to %dMi the running lane's pod is %+v, want a limit of %d", to, l.Pod, limit)
		}
	}
	v := enginetest.WaitDone(t, r, 2*time.Minute)
	t.Logf("the lane then exited %s, OOM killed %v", exitText(v.Lanes[0].ExitCode), v.Lanes[0].OOMKilled)
}

// checkReportsToTheEnd: a load lane's reports, which come through its
// pod's log, reach the server until the lane ends (a log stream the API
// server closes while the pod runs is opened again), and none of its
// samples says they stopped.
//
// On the emulated node (LIMITLAB_TEST_EMULATED_CPU) a gap is logged, not
// required to be absent, as its CPU verdicts are: there the lane's log
// lines, on one qemu thread shared by kubelet, containerd and a service
// using 1.5 of its 2 CPUs, have once come more than the 5 s apart that
// makes a lane stalled (CI, 2026-12-07: reports from 29.8 s of a lane
// that ran to 42.7 s, which the same test on the real node never showed).
func checkReportsToTheEnd(t *testing.T, r *runner.Run, l runner.LaneResult) {
	t.Helper()
	fail := t.Errorf
	if enginetest.EmulatedCPU() {
		fail = func(format string, args ...any) { t.Logf("on emulated CPUs, logged, not required: "+format, args...) }
	}
	last := 0.0
	for _, s := range enginetest.Samples(t, r) {
		if s.Lane == l.Index && s.LatencyMs != nil {
			last = s.T
		}
		if s.Lane == l.Index && s.Stalled {
			fail("lane %s: its sample at %.1f s says its reports stopped", l.Name, s.T)
			break
		}
	}
	if l.ProgressStoppedAt != 0 || l.EndedAt-last > 6 {
		fail("lane %s ran %.1f–%.1f s; its last latency came at %.1f s, its reports stopped at %.1f s", l.Name, l.StartedAt, l.EndedAt, last, l.ProgressStoppedAt)
	}
	t.Logf("lane %s ran %.1f–%.1f s, its last latency at %.1f s", l.Name, l.StartedAt, l.EndedAt, last)
}
