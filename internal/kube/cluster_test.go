//go:build k8s

// These tests run the labs as pods on a real cluster: make test-k8s starts
// one (k8s/run.sh) and names it in LIMITLAB_KUBECONFIG, with the binary
// whose image it imported in LIMITLAB_WORKLOAD_BIN. Without them they fail.
package kube_test

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/kube"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workshop"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const instance = "kube-test"

// cluster connects to the test cluster and returns a manager whose one
// engine is it, shut down (its pods removed) when the test ends.
func cluster(t *testing.T) (*workshop.Manager, kubernetes.Interface) {
	t.Helper()
	kc, bin := os.Getenv("LIMITLAB_KUBECONFIG"), os.Getenv("LIMITLAB_WORKLOAD_BIN")
	if kc == "" || bin == "" {
		t.Fatal("LIMITLAB_KUBECONFIG and LIMITLAB_WORKLOAD_BIN name no cluster and image: run make test-k8s, which starts one")
	}
	cl, err := kube.Connect(kc, "default", instance, "/sys/fs/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	prepare := func(ctx context.Context) (engine.HostInfo, string, error) {
		h, err := cl.Probe(ctx)
		if err != nil {
			return h, "", err
		}
		img, err := engine.OCIImageRef(bin)
		return h, img, err
	}
	m := workshop.NewManager(nil, workshop.Options{Instance: instance, Log: slog.Default(), Quotas: &workshop.Quotas{},
		Pool: []workshop.PoolEngine{{Name: "kubernetes", Address: cl.Server(), Driver: cl, Prepare: prepare}}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = m.Shutdown(ctx)
	})
	enginetest.WaitFor(t, 30*time.Second, "the cluster's node to be ready", func() bool {
		for _, e := range m.Engines() {
			if e.Up {
				return true
			}
		}
		return false
	})
	return m, cs
}

func runLab(t *testing.T, m *workshop.Manager, id string) runner.RunView {
	t.Helper()
	lab, ok := experiments.LabByID(id)
	if !ok {
		t.Fatalf("no lab %s", id)
	}
	spec := lab.LabSpec()
	p, errs := m.Validate(spec)
	if errs != nil {
		t.Fatalf("validate %s: %v", id, errs)
	}
	r, err := m.Submit(spec, p, "")
	if err != nil {
		t.Fatal(err)
	}
	return enginetest.WaitDone(t, r, 3*time.Minute)
}

// leftPods counts the pods of a run still there.
func leftPods(t *testing.T, cs kubernetes.Interface, runID string) int {
	t.Helper()
	list, err := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: engine.LabelRun + "=" + runID})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// checkKernel fails unless every cgroup file a lane's resources write was
// read back from its running pod and holds.
func checkKernel(t *testing.T, l runner.LaneResult) {
	t.Helper()
	if l.Kernel == nil || len(l.Kernel.Files) == 0 {
		t.Errorf("lane %s: no kernel view", l.Name)
		return
	}
	for _, f := range l.Kernel.Files {
		if !f.Present || !f.Holds {
			t.Errorf("lane %s: %s/%s = %q (present %v), want %q", l.Name, f.Controller, f.File, f.Got, f.Present, f.Want)
		}
	}
}

// The QoS lab to its verdict: three pods' QoS classes, each one's cgroup
// files read back, the CPU shared as the model says, nothing left.
func TestQoSContentionLab(t *testing.T) {
	m, cs := cluster(t)
	v := runLab(t, m, "k8s-qos-contention")
	if v.State != runner.StateDone {
		t.Fatalf("run %s: %s", v.State, v.Error)
	}
	want := []string{experiments.QoSGuaranteed, experiments.QoSBurstable, experiments.QoSBestEffort}
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
		if l.StatsSource != engine.StatsCgroup {
			t.Errorf("lane %s: stats from %q, want the pod's cgroup files", l.Name, l.StatsSource)
		}
	}
	for _, l := range v.Lanes {
		t.Logf("lane %s: exit %v, timed out %v, wall %.2f s, %.2f cores, error %q", l.Name, l.ExitCode, l.TimedOut, l.WallSeconds, l.MeasuredCores, l.Error)
	}
	enginetest.CheckVerdict(t, v.Verdict)
	if v.Verdict != nil {
		t.Logf("verdict: %s", v.Verdict.Explanation)
	}
	if n := leftPods(t, cs, v.ID); n != 0 {
		t.Errorf("%d pods of the run left", n)
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
	spec, errs := experiments.Parse([]byte(`{"mode": "parallel", "duration": "20s", "lanes": [
		{"name": "half", "workload": {"kind": "spin", "threads": 2, "seconds": 4}, "limits": {"cpus": "0.5", "memory": "64m"}}]}`))
	if errs != nil {
		t.Fatal(errs)
	}
	p, errs := m.Validate(spec)
	if errs != nil {
		t.Fatal(errs)
	}
	r, err := m.Submit(spec, p, "")
	if err != nil {
		t.Fatal(err)
	}
	// The pod as the API server holds it, while it runs.
	enginetest.WaitFor(t, time.Minute, "the lane's pod to run", func() bool { return r.View().Lanes[0].State == runner.LaneRunning })
	pod, err := cs.CoreV1().Pods("default").Get(context.Background(), engine.ContainerName(r.ID(), 0), metav1.GetOptions{})
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
		_, errs := m.Validate(spec)
		if len(errs) != 1 || errs[0].Field != c.field || !strings.Contains(errs[0].Message, c.says) {
			t.Errorf("%s: got %v, want an error on %s saying %q", c.limits, errs, c.field, c.says)
		}
	}
}
