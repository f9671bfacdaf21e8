//go:build k8s

// These tests run the labs as pods on a real cluster: make test-k8s starts
// one (k8s/run.sh) and names it in LIMITLAB_TEST_KUBECONFIG, with the binary
// whose image it imported in LIMITLAB_TEST_WORKLOAD_BIN. Without them they fail.
package kube_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/kubetest"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workshop"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

const instance = kubetest.Instance

// cluster is the test cluster's workshop (kubetest.Manager).
func cluster(t *testing.T) (*workshop.Manager, kubernetes.Interface) {
	t.Helper()
	return kubetest.Manager(t)
}

func runLab(t testing.TB, m *workshop.Manager, id string) runner.RunView {
	t.Helper()
	lab, ok := experiments.LabByID(id)
	if !ok {
		t.Fatalf("no lab %s", id)
	}
	spec := lab.LabSpec()
	p, errs := m.Pool().Validate(spec)
	if errs != nil {
		t.Fatalf("validate %s: %v", id, errs)
	}
	r, err := m.SubmitFrom(spec, p, "", "")
	if err != nil {
		t.Fatal(err)
	}
	return enginetest.WaitDone(t, r, 3*time.Minute)
}

// submit queues a run of spec on the cluster's workshop.
func submit(t testing.TB, m *workshop.Manager, spec string) *runner.Run {
	t.Helper()
	return enginetest.Submit(t, m, spec)
}

// leftPods counts the pods of a run still there.
func leftPods(t testing.TB, cs kubernetes.Interface, runID string) int {
	t.Helper()
	list, err := cs.CoreV1().Pods(kubetest.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: engine.LabelRun + "=" + runID})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// podStats is where a pod's counters come from: its cgroup files, read
// here on this machine's node; the node's sampler on the VM's
// (kubetest.Node).
func podStats() string {
	if kubetest.Node() != "" {
		return engine.StatsSampler
	}
	return engine.StatsCgroup
}

// checkKernel fails unless every cgroup file a lane's resources write was
// read back from its running pod and holds: for a request written as one
// of several files (v2's cpu.weight, by either runc formula), any of them.
func checkKernel(t testing.TB, l runner.LaneResult) {
	t.Helper()
	if l.Kernel == nil || len(l.Kernel.Files) == 0 {
		t.Errorf("lane %s: no kernel view", l.Name)
		return
	}
	if l.Kernel.Note != "" {
		t.Logf("lane %s: kernel view: %s", l.Name, l.Kernel.Note)
	}
	for _, f := range l.Kernel.Files {
		if !f.Present {
			t.Errorf("lane %s: %s/%s not read back (want %q)", l.Name, f.Controller, f.File, f.Want)
		}
	}
	if bad := enginetest.Unheld(l.Kernel.Files); len(bad) != 0 {
		for _, f := range l.Kernel.Files {
			t.Logf("lane %s: %s/%s = %q, want %q (%s)", l.Name, f.Controller, f.File, f.Got, f.Want, f.Formula)
		}
		t.Errorf("lane %s: the files of %v do not hold", l.Name, bad)
	}
}

// The QoS lab to its verdict: three pods' QoS classes, each one's cgroup
// files read back, the CPU shared as the model says, nothing left.
//
// Only the verdict, a measured figure the shared host can spoil (the
// control plane runs on the same two CPUs), is measured again; the
// checks of the pods, their files and what is left run once, on the run
// whose verdict held.
func TestQoSContentionLab(t *testing.T) {
	m, cs := cluster(t)
	var v runner.RunView
	enginetest.Measure(t, "the QoS lab's verdict", func(t testing.TB) {
		v = runLab(t, m, "k8s-qos-contention")
		if v.State != runner.StateDone {
			t.Fatalf("run %s: %s", v.State, v.Error)
		}
		enginetest.CheckVerdict(t, v.Verdict)
	})
	if n := leftPods(t, cs, v.ID); n != 0 {
		t.Errorf("%d pods of the run left", n)
	}
	want := []string{specs.QoSGuaranteed, specs.QoSBurstable, specs.QoSBestEffort}
	for i, l := range v.Lanes {
		if l.Pod == nil || l.Pod.QoS != want[i] {
			t.Errorf("lane %s: pod %+v, want QoS %s", l.Name, l.Pod, want[i])
		}
		checkKernel(t, l)
		for _, s := range []string{"runAsNonRoot: true", "readOnlyRootFilesystem: true", "allowPrivilegeEscalation: false", "automountServiceAccountToken: false", "RuntimeDefault", "restartPolicy: Never"} {
			if !strings.Contains(l.PodYAML, s) {
				t.Errorf("lane %s: the pod's YAML lacks %q:\n%s", l.Name, s, l.PodYAML)
			}
		}
		if want := podStats(); l.StatsSource != want {
			t.Errorf("lane %s: stats from %q, want %q", l.Name, l.StatsSource, want)
		}
	}
	for _, l := range v.Lanes {
		t.Logf("lane %s: exit %v, timed out %v, ran %.2f–%.2f s, wall %.2f s, %.3f cores, error %q", l.Name, exitText(l.ExitCode), l.TimedOut, l.StartedAt, l.EndedAt, l.WallSeconds, l.MeasuredCores, l.Error)
	}
	if vd := v.Verdict; vd != nil {
		t.Logf("verdict: %s", vd.Explanation)
		if len(vd.Measured) == 3 {
			t.Logf("figure: k8s-qos-contention (CPU ratios while all ran) | %.2f : %.2f : %.3f (predicted %.2f : %.2f : %.3f)", vd.Measured[0], vd.Measured[1], vd.Measured[2], vd.Predicted[0], vd.Predicted[1], vd.Predicted[2])
		}
	}
	if s := v.Start; s != nil {
		t.Logf("figure: k8s start barrier, 3 pods | began within %.2f ms; the pods started over %.0f ms", s.SkewMs, s.StartsMs)
	}
}

// A pod over its limits.memory is OOMKilled, as kubelet says; the one with
// room holds.
func TestOOMLab(t *testing.T) {
	m, _ := cluster(t)
	v := runLab(t, m, "k8s-oom")
	if v.State != runner.StateDone {
		t.Fatalf("run %s: %s", v.State, v.Error)
	}
	small, big := v.Lanes[0], v.Lanes[1]
	if !small.OOMKilled || small.ExitCode == nil || *small.ExitCode != 137 {
		t.Errorf("lane %s: OOM killed %v, exit %v; want OOMKilled, 137", small.Name, small.OOMKilled, small.ExitCode)
	}
	if big.OOMKilled || big.ExitCode == nil || *big.ExitCode != 0 {
		t.Errorf("lane %s: OOM killed %v, exit %v; want it to hold its memory and exit 0", big.Name, big.OOMKilled, big.ExitCode)
	}
	for _, l := range v.Lanes {
		checkKernel(t, l)
	}
}

// Docker flags on a Kubernetes engine: translated where exact, and the
// pod's cgroup says so; refused with the reason where not.
func TestDockerFlagsOnACluster(t *testing.T) {
	m, cs := cluster(t)
	r := submit(t, m, `{"mode": "parallel", "duration": "20s", "lanes": [
		{"name": "half", "workload": {"kind": "spin", "threads": 2, "seconds": 4}, "limits": {"cpus": "0.5", "memory": "64m"}}]}`)
	// The pod as the API server holds it, while it runs.
	enginetest.WaitFor(t, time.Minute, "the lane's pod to run", func() bool { return r.View().Lanes[0].State == runner.LaneRunning })
	pod, err := cs.CoreV1().Pods(kubetest.Namespace).Get(context.Background(), engine.ContainerName(r.ID(), 0), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Errorf("QoS %s, want Guaranteed (limits alone)", pod.Status.QOSClass)
	}
	c := pod.Spec.Containers[0]
	if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil || len(c.SecurityContext.Capabilities.Drop) != 1 || c.SecurityContext.Capabilities.Drop[0] != "ALL" || pod.Spec.HostNetwork || pod.Spec.HostPID {
		t.Errorf("the pod is not hardened: %+v", pod.Spec)
	}
	if pod.Labels[engine.LabelInstance] != instance || pod.Labels[engine.LabelRun] != r.ID() {
		t.Errorf("labels %v", pod.Labels)
	}
	v := enginetest.WaitDone(t, r, 2*time.Minute)
	l := v.Lanes[0]
	checkKernel(t, l)
	if l.Pod == nil || l.Pod.LimitMilliCPU != 500 || l.Pod.LimitMemory != 64<<20 {
		t.Errorf("pod resources %+v, want limits of 500m and 64Mi", l.Pod)
	}
	if got := l.MeasuredCores; got < 0.4 || got > 0.6 {
		t.Errorf("two threads under limits.cpu 500m used %.2f CPUs", got)
	}

	for _, c := range []struct{ limits, field, says string }{
		{`{"blkio-weight": "300"}`, "blkio-weight", "no block IO weight"},
		{`{"device-write-bps": "auto:5mb"}`, "device-write-bps", "no block IO throttle"},
		{`{"cpu-period": "50000"}`, "cpu-period", "the period is the node's"},
		{`{"cpus": "0.0125"}`, "cpus", "millicores"},
	} {
		spec, _ := experiments.Parse([]byte(`{"lanes": [{"workload": {"kind": "spin"}, "limits": ` + c.limits + `}]}`))
		_, errs := m.Pool().Validate(spec)
		if len(errs) != 1 || errs[0].Field != c.field || !strings.Contains(errs[0].Message, c.says) {
			t.Errorf("%s: got %v, want an error on %s saying %q", c.limits, errs, c.field, c.says)
		}
	}
}

// A Go service in a pod under limits.cpu 1, three times under the same
// load: throttled with GOMAXPROCS above the limit, hardly with 1; the load
// pods reach each service pod at its own address. The verdict is measured
// (again if the host spoiled it) and must hold to the lab's tolerance: on
// this cluster the services above the limit were throttled for 0.30 to
// 0.44 of their CPUs' time against the model's half (docs/benchmarks.md),
// which the lab's tolerance of 0.25 takes. The lanes' kernel views and
// their loads are checked once, on the run that held.
func TestGOMAXPROCSLab(t *testing.T) {
	m, _ := cluster(t)
	var v runner.RunView
	enginetest.Measure(t, "the GOMAXPROCS lab's verdict", func(t testing.TB) {
		v = runLab(t, m, "k8s-gomaxprocs")
		if v.State != runner.StateDone {
			t.Fatalf("run %s: %s", v.State, v.Error)
		}
		vd := v.Verdict
		if vd == nil || !vd.Judged || len(vd.Measured) != 3 {
			t.Fatalf("verdict %+v, want one judged on the three services", vd)
		}
		t.Logf("figure: k8s-gomaxprocs (share of time throttled) | %.2f : %.2f : %.2f (predicted %.2f : %.2f : %.2f), pass %v",
			vd.Measured[0], vd.Measured[1], vd.Measured[2], vd.Predicted[0], vd.Predicted[1], vd.Predicted[2], vd.Pass)
		enginetest.CheckVerdict(t, vd)
	})
	for _, l := range v.Lanes {
		t.Logf("lane %s: exit %s, ran %.2f–%.2f s, wall %.2f s, %.1f %s, throttled %.2f s, error %q", l.Name, exitText(l.ExitCode), l.StartedAt, l.EndedAt, l.WallSeconds, l.Throughput, l.Unit, l.ThrottledSeconds, l.Error)
		if l.Workload.Kind == specs.KindLoad && l.Throughput <= 0 {
			t.Errorf("lane %s reached no service", l.Name)
		}
		checkKernel(t, l)
	}
}

// exitText is an exit code, or "none".
func exitText(c *int) string {
	if c == nil {
		return "none"
	}
	return strconv.Itoa(*c)
}

// A lane's pod YAML, applied as a person would copy it from the run page,
// starts its work at once: no start barrier waits for a file only the
// server writes, and no label makes it the server's.
func TestACopiedPodYAMLStartsItsWork(t *testing.T) {
	m, cs := cluster(t)
	r := submit(t, m, `{"lanes": [{"name": "copied", "workload": {"kind": "spin", "seconds": 3}, "resources": {"limits": {"cpu": "500m", "memory": "64Mi"}}}]}`)
	v := enginetest.WaitDone(t, r, 2*time.Minute)
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict([]byte(v.Lanes[0].PodYAML), &pod); err != nil {
		t.Fatalf("the shown pod YAML: %v\n%s", err, v.Lanes[0].PodYAML)
	}
	for k := range pod.Labels {
		if strings.HasPrefix(k, "io.limitlab.") {
			t.Errorf("the shown pod carries the server's label %s", k)
		}
	}
	pod.Name += "-copied"
	ctx := context.Background()
	made, err := cs.CoreV1().Pods(kubetest.Namespace).Create(ctx, &pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("applying the shown pod YAML: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Pods(kubetest.Namespace).Delete(context.Background(), made.Name, metav1.DeleteOptions{})
		enginetest.WaitFor(t, time.Minute, "the copied pod gone", func() bool {
			_, err := cs.CoreV1().Pods(kubetest.Namespace).Get(context.Background(), made.Name, metav1.GetOptions{})
			return err != nil
		})
	})
	var done *corev1.ContainerStateTerminated
	enginetest.WaitFor(t, 2*time.Minute, "the copied pod to end", func() bool {
		got, err := cs.CoreV1().Pods(kubetest.Namespace).Get(ctx, made.Name, metav1.GetOptions{})
		if err != nil || len(got.Status.ContainerStatuses) == 0 {
			return false
		}
		done = got.Status.ContainerStatuses[0].State.Terminated
		return done != nil
	})
	// Its 3 s of work ran at once: the barrier would have held it 30 s.
	ran := done.FinishedAt.Sub(done.StartedAt.Time)
	if done.ExitCode != 0 || ran > 15*time.Second {
		t.Errorf("the copied pod exited %d after %v (%s), want 0 after its 3 s of work", done.ExitCode, ran, done.Message)
	}
}
