//go:build k8s

package main

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/kube"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workshop"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
)

// The test cluster's real node beside two fake ones (Node objects no
// kubelet stands behind: one reporting Ready, one not): the server makes
// each node an engine of the pool; the fake ones stay out, each saying
// why; two runs submitted at once both go to the real node, one after
// the other, each holding the node's taint while it runs.
func TestKubernetesNodesArePlacedLikeEngines(t *testing.T) {
	kc, admin, bin := os.Getenv("LIMITLAB_TEST_KUBECONFIG"), os.Getenv("LIMITLAB_ADMIN_KUBECONFIG"), os.Getenv("LIMITLAB_TEST_WORKLOAD_BIN")
	if kc == "" || admin == "" || bin == "" {
		t.Fatal("LIMITLAB_TEST_KUBECONFIG, LIMITLAB_ADMIN_KUBECONFIG and LIMITLAB_TEST_WORKLOAD_BIN name no cluster: run make test-k8s, which starts one")
	}
	cs := fakeNodes(t, admin, fakes)
	ctx := context.Background()

	m, nodes := nodesPool(t, kc, bin, "nodes-test")
	if len(nodes) != 3 {
		t.Fatalf("nodes %v; want the real one and the two fakes", nodes)
	}
	var real string
	enginetest.WaitFor(t, time.Minute, "the real node's engine to be up and the fakes' to say why not", func() bool {
		real = ""
		said := 0
		for _, e := range m.Pool().Engines() {
			switch {
			case e.Up:
				real = e.Name
			case e.Error != "":
				said++
			}
		}
		return real != "" && said == 2
	})
	for _, e := range m.Pool().Engines() {
		t.Logf("engine %s (%s): up %v, %s", e.Name, e.Address, e.Up, e.Error)
		node := e.Address[strings.LastIndex(e.Address, " ")+1:]
		// The engines page's row of a kubelet of 1.35 or later on this
		// cgroup v1 node says that it runs only with failCgroupV1: false.
		if e.Up && (e.Host == nil || !strings.Contains(e.Host.Description, "failCgroupV1: false")) {
			t.Errorf("engine %s of node %s: the row says %+v, want failCgroupV1: false named", e.Name, node, e.Host)
		}
		if _, fake := fakes[node]; fake == e.Up {
			t.Errorf("engine %s of node %s: up %v", e.Name, node, e.Up)
		}
		if node == "limitlab-fake-a" && !strings.Contains(e.Error, "not the machine the server runs on") && !strings.Contains(e.Error, "not Ready") {
			t.Errorf("the fake node reporting Ready: %q", e.Error)
		}
		if node == "limitlab-fake-b" && !strings.Contains(e.Error, "not Ready") {
			t.Errorf("the fake node not Ready: %q", e.Error)
		}
	}

	runs := submitTwice(t, m, `{"mode": "parallel", "duration": "20s", "lanes": [{"workload": {"kind": "spin", "threads": 1, "seconds": 2}, "resources": {"limits": {"cpu": "500m", "memory": "32Mi"}}}]}`)
	admin1 := cs.CoreV1().Nodes()
	enginetest.WaitFor(t, time.Minute, "the first run to hold the real node", func() bool {
		n, err := admin1.Get(ctx, realNode(nodes, fakes), metav1.GetOptions{})
		return err == nil && n.Labels[engine.LabelRun] == runs[0].ID() && len(n.Spec.Taints) == 1 && n.Spec.Taints[0].Value == runs[0].ID()
	})
	for _, r := range runs {
		v := enginetest.WaitDone(t, r, 2*time.Minute)
		if v.State != runner.StateDone || v.Engine != real {
			t.Errorf("run %s: %s on engine %q, want done on %q (%s)", v.ID, v.State, v.Engine, real, v.Error)
		}
	}
	n, err := admin1.Get(ctx, realNode(nodes, fakes), metav1.GetOptions{})
	if err != nil || n.Labels[engine.LabelRun] != "" || len(n.Spec.Taints) != 0 {
		t.Errorf("the real node after the runs: %v, labels %v, taints %v", err, n.Labels, n.Spec.Taints)
	}
}

// nodesPool connects to the test cluster as kubeconfig kc says and makes
// each of its nodes an engine of a workshop's pool, as the server does,
// with the workload image of bin; it returns the workshop and the nodes.
func nodesPool(t *testing.T, kc, bin, instance string) (*workshop.Manager, []string) {
	t.Helper()
	img, err := engine.OCIImageRef(bin)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kube.Connect(kube.Config{Kubeconfig: kc, Namespace: "limitlab", Instance: instance, CgroupRoot: "/sys/fs/cgroup", Image: img})
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := cl.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pool := clusterEngines("k8s", cl, nodes, func(e *kube.Engine, _ string) func(context.Context) (engine.HostInfo, string, error) {
		return func(ctx context.Context) (engine.HostInfo, string, error) {
			h, err := e.Probe(ctx)
			return h, img, err
		}
	})
	return enginetest.Managed(t, nil, workshop.Options{Instance: instance, Log: slog.Default(), Quotas: &workshop.Quotas{}, Pool: pool}), nodes
}

// submitTwice submits two runs of spec at once.
func submitTwice(t *testing.T, m *workshop.Manager, spec string) []*runner.Run {
	t.Helper()
	return []*runner.Run{enginetest.Submit(t, m, spec), enginetest.Submit(t, m, spec)}
}

func realNode(nodes []string, fakes map[string]bool) string {
	for _, n := range nodes {
		if _, fake := fakes[n]; !fake {
			return n
		}
	}
	return ""
}

// fakes are the fake nodes of TestKubernetesNodesArePlacedLikeEngines, by
// name, with whether each reports Ready.
var fakes = map[string]bool{"limitlab-fake-a": true, "limitlab-fake-b": false}

// fakeNodes adds the fake Node objects to the test cluster, as its
// administrator, until the test ends: one that reports Ready (from
// another machine), one that never does. It returns the administrator's
// client.
func fakeNodes(t *testing.T, admin string, fakes map[string]bool) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", admin)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	for name, ready := range fakes {
		if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		if !ready {
			continue
		}
		// The node controller writes the new node too.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
			n.Status.NodeInfo.BootID = "not-this-machine"
			_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	return cs
}
