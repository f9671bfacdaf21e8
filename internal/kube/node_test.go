//go:build k8s

package kube_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/kube"
	"github.com/limitlab/limitlab/internal/kubetest"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workshop"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// theNode is the test cluster's one node.
func theNode(t *testing.T, cs kubernetes.Interface) *corev1.Node {
	t.Helper()
	list, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("nodes: %v (%d)", err, len(list.Items))
	}
	return &list.Items[0]
}

// runTaint is the node's run taint, if it has one.
func runTaint(n *corev1.Node) *corev1.Taint {
	for i, tt := range n.Spec.Taints {
		if tt.Key == kube.TaintRun {
			return &n.Spec.Taints[i]
		}
	}
	return nil
}

func spinSpec(t *testing.T, m *workshop.Manager) (specs.Spec, specs.Plan) {
	t.Helper()
	spec, errs := experiments.Parse([]byte(`{"mode": "parallel", "duration": "20s", "lanes": [
		{"name": "spin", "workload": {"kind": "spin", "seconds": 3}, "limits": {"cpus": "0.25"}}]}`))
	if errs != nil {
		t.Fatal(errs)
	}
	p, errs := m.Pool().Validate(spec)
	if errs != nil {
		t.Fatal(errs)
	}
	return spec, p
}

// A run takes the node for its time: while it runs the node is labelled
// with the run and this server, and tainted so that the scheduler places
// nothing else there (the run's pods tolerate it); when it ends the node
// is given back. A node another server's run holds is refused, naming the
// run, and left as that server marked it.
func TestARunTakesTheNode(t *testing.T) {
	m, cs := cluster(t)
	spec, p := spinSpec(t, m)
	r, err := m.SubmitFrom(spec, p, "", "")
	if err != nil {
		t.Fatal(err)
	}
	enginetest.WaitFor(t, time.Minute, "the lane's pod to run", func() bool { return r.View().Lanes[0].State == runner.LaneRunning })
	n := theNode(t, cs)
	if n.Labels[engine.LabelRun] != r.ID() || n.Labels[engine.LabelInstance] != instance {
		t.Errorf("while the run runs the node's labels are %v", n.Labels)
	}
	if tt := runTaint(n); tt == nil || tt.Value != r.ID() || tt.Effect != corev1.TaintEffectNoSchedule {
		t.Errorf("while the run runs the node's taints are %+v", n.Spec.Taints)
	}
	pod, err := cs.CoreV1().Pods(kubetest.Namespace).Get(context.Background(), engine.ContainerName(r.ID(), 0), metav1.GetOptions{})
	if err != nil || len(pod.Spec.Tolerations) == 0 {
		t.Fatalf("the run's pod: %v %+v", err, pod)
	}
	enginetest.WaitDone(t, r, 2*time.Minute)
	n = theNode(t, cs)
	if _, ok := n.Labels[engine.LabelRun]; ok || runTaint(n) != nil {
		t.Errorf("after the run the node keeps %v %+v", n.Labels, n.Spec.Taints)
	}

	// Another server's run holds the node: its mark, and its lease, which
	// it renews.
	n.Labels[engine.LabelRun], n.Labels[engine.LabelInstance] = "elsewhere", "another-server"
	if _, err := cs.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	who, ttl, now := "another-server/elsewhere", int32(kube.LeaseTTL/time.Second), metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "limitlab-node-" + n.Name},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &who, LeaseDurationSeconds: &ttl, RenewTime: &now}}
	if _, err := cs.CoordinationV1().Leases(kubetest.Namespace).Create(context.Background(), lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n := theNode(t, cs)
		delete(n.Labels, engine.LabelRun)
		delete(n.Labels, engine.LabelInstance)
		_, _ = cs.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{})
		_ = cs.CoordinationV1().Leases(kubetest.Namespace).Delete(context.Background(), lease.Name, metav1.DeleteOptions{})
	})
	r, err = m.SubmitFrom(spec, p, "", "")
	if err != nil {
		t.Fatal(err)
	}
	v := enginetest.WaitDone(t, r, 2*time.Minute)
	if v.State != runner.StateFailed || len(v.Lanes) != 1 || !strings.Contains(v.Lanes[0].Error, "taken by run elsewhere of the Limit Lab server another-server") {
		t.Errorf("a run on a node another server holds: %s %q, lanes %+v", v.State, v.Error, v.Lanes)
	}
	if n := theNode(t, cs); n.Labels[engine.LabelRun] != "elsewhere" {
		t.Errorf("the other server's mark was changed: %v", n.Labels)
	}
	if n := leftPods(t, cs, r.ID()); n != 0 {
		t.Errorf("%d pods of the refused run", n)
	}

	// That server dies: its lease is no longer renewed. Once it expired,
	// the node is this server's to clear and take.
	l, err := cs.CoordinationV1().Leases(kubetest.Namespace).Get(context.Background(), lease.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	past := metav1.NewMicroTime(time.Now().Add(-2 * kube.LeaseTTL))
	l.Spec.RenewTime = &past
	if _, err := cs.CoordinationV1().Leases(kubetest.Namespace).Update(context.Background(), l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r, err = m.SubmitFrom(spec, p, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if v := enginetest.WaitDone(t, r, 2*time.Minute); v.State != runner.StateDone {
		t.Errorf("a run on a node whose holder's lease expired: %s %q, lanes %+v", v.State, v.Error, v.Lanes)
	}
	if n := theNode(t, cs); n.Labels[engine.LabelRun] != "" || runTaint(n) != nil {
		t.Errorf("the dead server's mark stayed: %v %+v", n.Labels, n.Spec.Taints)
	}
}
