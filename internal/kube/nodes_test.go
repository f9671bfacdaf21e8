package kube

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func fakeNode(name string, ready, cordoned bool, boot string) *corev1.Node {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Unschedulable: cordoned},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}, NodeInfo: corev1.NodeSystemInfo{BootID: boot}}}
}

// fakeEngine is an engine of the fake cluster cs for node, its cgroup
// files under root.
func fakeEngine(cs *fake.Clientset, root, node string) *Engine {
	return newCluster(cs, "https://fake", Config{Namespace: "limitlab", Instance: "me", CgroupRoot: root}).Engine(node)
}

func fakePod(name, node, run string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "limitlab", Labels: map[string]string{engine.LabelRun: run, engine.LabelInstance: "me"}},
		Spec: corev1.PodSpec{NodeName: node}}
}

// A cluster of fake nodes, one of them this machine: each node is an
// engine of its own, probed for itself, taken for a run alone, and
// reaping only its own pods.
func TestEachNodeIsAnEngine(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "cpu", "kubepods"), 0o755); err != nil {
		t.Fatal(err)
	}
	cs := fake.NewSimpleClientset(
		fakeNode("here", true, false, bootID), fakeNode("there", true, false, "another-boot"),
		fakeNode("down", false, false, "x"), fakeNode("cordoned", true, true, "y"),
		fakePod("a-here", "here", "run-a"), fakePod("a-there", "there", "run-a"))
	ctx := context.Background()
	cl := newCluster(cs, "https://fake", Config{Namespace: "limitlab", Instance: "me", CgroupRoot: root})

	nodes, err := cl.Nodes(ctx)
	if err != nil || !slices.Equal(nodes, []string{"down", "here", "there"}) {
		t.Fatalf("Nodes = %v, %v; want every node not cordoned", nodes, err)
	}
	here, there, down := cl.Engine("here"), cl.Engine("there"), cl.Engine("down")
	h, err := here.Probe(ctx)
	if err != nil || h.Kube == nil || h.Kube.Node != "here" || !strings.Contains(h.Kube.CPUManagerNote, "not probed") {
		t.Fatalf("probe of this machine's node: %+v, %v", h, err)
	}
	if _, err := there.Probe(ctx); err == nil || !strings.Contains(err.Error(), "not the machine the server runs on") {
		t.Errorf("probe of another machine's node: %v", err)
	}
	if _, err := down.Probe(ctx); err == nil || !strings.Contains(err.Error(), "not Ready") {
		t.Errorf("probe of a node not Ready: %v", err)
	}
	if _, err := cl.Engine("cordoned").Probe(ctx); err == nil || !strings.Contains(err.Error(), "cordoned") {
		t.Errorf("probe of a cordoned node: %v", err)
	}

	// Another server's run on the node: its engine takes no run meanwhile,
	// and an engine of the cluster as a whole picks another node.
	n, _ := cs.CoreV1().Nodes().Get(ctx, "here", metav1.GetOptions{})
	n.Labels = map[string]string{engine.LabelRun: "theirs", engine.LabelInstance: "another"}
	if _, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoordinationV1().Leases("limitlab").Create(ctx, fakeLease("here", "another/theirs", time.Now()), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := here.Probe(ctx); err == nil || !strings.Contains(err.Error(), "taken by run theirs of the Limit Lab server another") {
		t.Errorf("probe of a node another server's run holds: %v", err)
	}
	if got, err := cl.Engine("").pickNode(ctx); err != nil || got.Name != "there" {
		t.Errorf("the cluster's node with this one held elsewhere: %s, %v; want there", got.Name, err)
	}
	n, _ = cs.CoreV1().Nodes().Get(ctx, "here", metav1.GetOptions{})
	n.Labels = nil
	if _, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoordinationV1().Leases("limitlab").Delete(ctx, leaseName("here"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := here.lease.take(ctx, "run-a"); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"here": true, "there": false} {
		n, _ := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if _, _, got := taken(n); got != want {
			t.Errorf("node %s taken %v, want %v", name, got, want)
		}
	}

	if n, err := here.Reap(ctx, engine.LabelRun, "run-a"); err != nil || n != 1 {
		t.Errorf("reap on node here: %d, %v", n, err)
	}
	left, _ := cs.CoreV1().Pods("limitlab").List(ctx, metav1.ListOptions{})
	if len(left.Items) != 1 || left.Items[0].Name != "a-there" {
		t.Errorf("pods left %v, want the other node's", left.Items)
	}
	if err := here.ReapRun(ctx, "run-a", nil); err != nil {
		t.Fatal(err)
	}
	n, _ = cs.CoreV1().Nodes().Get(ctx, "here", metav1.GetOptions{})
	if _, _, ok := taken(n); ok || len(n.Spec.Taints) != 0 {
		t.Errorf("node here after its run: labels %v, taints %v", n.Labels, n.Spec.Taints)
	}
}
