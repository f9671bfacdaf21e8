//go:build k8s

package main

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/runner"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
)

// The test cluster's two real nodes (k8s/run.sh's two-node round): the
// host's, on cgroup v1, and the VM's, on cgroup v2, each an engine of the
// pool. Both come up, each row saying its node's cgroup version; two runs
// submitted at once are placed one on each node, and the VM node's is
// read through its sampler.
func TestTwoRealNodesShareThePool(t *testing.T) {
	kc, bin := os.Getenv("LIMITLAB_TEST_KUBECONFIG"), os.Getenv("LIMITLAB_TEST_WORKLOAD_BIN")
	if kc == "" || bin == "" {
		t.Fatal("LIMITLAB_TEST_KUBECONFIG and LIMITLAB_TEST_WORKLOAD_BIN name no cluster: run make test-k8s, which starts one")
	}
	m, nodes := nodesPool(t, kc, bin, "two-nodes-test")
	if len(nodes) != 2 {
		t.Fatalf("nodes %v; want the host's and the VM's", nodes)
	}
	enginetest.WaitFor(t, 2*time.Minute, "both nodes' engines to be up", func() bool {
		up := 0
		for _, e := range m.Pool().Engines() {
			if e.Up {
				up++
			}
		}
		return up == 2
	})
	versions := map[string]string{}
	for _, e := range m.Pool().Engines() {
		if e.Host == nil {
			t.Fatalf("engine %s: no host", e.Name)
		}
		t.Logf("engine %s (%s): cgroup v%s, stats from %s: %s", e.Name, e.Address, e.Host.CgroupVersion, e.Host.StatsSource, e.Host.Description)
		versions[e.Host.CgroupVersion] = e.Name
		v1Row := strings.Contains(e.Host.Description, "failCgroupV1: false")
		if v1Row != (e.Host.CgroupVersion == "1") {
			t.Errorf("engine %s on cgroup v%s: its row names failCgroupV1: false %v, want only on v1", e.Name, e.Host.CgroupVersion, v1Row)
		}
	}
	if versions["1"] == "" || versions["2"] == "" {
		t.Fatalf("the engines' cgroup versions %v, want one node on each", versions)
	}

	runs := submitTwice(t, m, `{"mode": "parallel", "duration": "60s", "lanes": [{"workload": {"kind": "spin", "threads": 1, "seconds": 3}, "resources": {"limits": {"cpu": "500m", "memory": "32Mi"}}}]}`)
	on := map[string]runner.RunView{}
	for _, r := range runs {
		v := enginetest.WaitDone(t, r, 4*time.Minute)
		if v.State != runner.StateDone {
			t.Errorf("run %s: %s on %q: %s", v.ID, v.State, v.Engine, v.Error)
		}
		on[v.Engine] = v
		l := v.Lanes[0]
		t.Logf("run %s on %s (%s): %s, %.2f cores, stats from %s", v.ID, v.Engine, v.Host, v.State, l.MeasuredCores, l.StatsSource)
		enginetest.Figure(t, "pod start, "+v.Host, "%.2f s from the run's start to its pod's first work", l.StartedAt)
	}
	if len(on) != 2 {
		t.Fatalf("both runs on %v, want one on each node", on)
	}
	if v := on[versions["2"]]; v.Lanes[0].StatsSource != engine.StatsSampler {
		t.Errorf("the VM node's run read from %q, want its sampler", v.Lanes[0].StatsSource)
	}
}

// TestANodeTaintedBySomeoneElseGetsNoLane: the host's node is tainted
// NoSchedule by its administrator, as a control plane or a dedicated node
// is. Its engine says why it takes no run, and two runs submitted at once
// both go to the VM's node, one after the other, their pods there.
func TestANodeTaintedBySomeoneElseGetsNoLane(t *testing.T) {
	kc, admin, bin := os.Getenv("LIMITLAB_TEST_KUBECONFIG"), os.Getenv("LIMITLAB_ADMIN_KUBECONFIG"), os.Getenv("LIMITLAB_TEST_WORKLOAD_BIN")
	if kc == "" || admin == "" || bin == "" {
		t.Fatal("LIMITLAB_TEST_KUBECONFIG, LIMITLAB_ADMIN_KUBECONFIG and LIMITLAB_TEST_WORKLOAD_BIN name no cluster: run make test-k8s, which starts one")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", admin)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("nodes: %v (%d), want the host's and the VM's", err, len(list.Items))
	}
	hostname, _ := os.Hostname()
	tainted, free := list.Items[0].Name, list.Items[1].Name
	if free == hostname || strings.EqualFold(free, hostname) {
		tainted, free = free, tainted
	}
	intruder := corev1.Taint{Key: "example.com/dedicated", Value: "someone-else", Effect: corev1.TaintEffectNoSchedule}
	setTaint := func(on bool) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := cs.CoreV1().Nodes().Get(ctx, tainted, metav1.GetOptions{})
			if err != nil {
				return err
			}
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == intruder.Key })
			if on {
				n.Spec.Taints = append(n.Spec.Taints, intruder)
			}
			_, err = cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			return err
		})
	}
	if err := setTaint(true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := setTaint(false); err != nil {
			t.Errorf("taking the test's taint off %s: %v", tainted, err)
		}
	})
	m, _ := nodesPool(t, kc, bin, "taint-test")
	var freeEngine string
	enginetest.WaitFor(t, 2*time.Minute, "the free node's engine up and the tainted one's saying why not", func() bool {
		up, said := false, false
		for _, e := range m.Pool().Engines() {
			if e.Up && strings.HasSuffix(e.Address, " node "+free) {
				up, freeEngine = true, e.Name
			}
			said = said || (!e.Up && strings.HasSuffix(e.Address, " node "+tainted) &&
				strings.Contains(e.Error, intruder.Key+":NoSchedule") && strings.Contains(e.Error, "-kube-tolerate"))
		}
		return up && said
	})
	runs := submitTwice(t, m, `{"mode": "parallel", "duration": "20s", "lanes": [{"workload": {"kind": "spin", "threads": 1, "seconds": 2}, "resources": {"limits": {"cpu": "250m", "memory": "32Mi"}}}]}`)
	for _, r := range runs {
		v := enginetest.WaitDone(t, r, 4*time.Minute)
		// A run's pods require its engine's node: the run's host names it.
		if v.State != runner.StateDone || v.Engine != freeEngine || !strings.Contains(v.Host, "node "+free) {
			t.Errorf("run %s: %s on %q (%s), want done on %s (node %s): %s", v.ID, v.State, v.Engine, v.Host, freeEngine, free, v.Error)
		}
	}
}
