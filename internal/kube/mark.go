package kube

import (
	"context"
	"fmt"
	"slices"

	"github.com/limitlab/limitlab/internal/engine"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// A node's mark: the label and taint a run's hold puts on its node
// (lease.go), read and written on any node.

// TaintRun is the taint a run puts on the node it takes, its value the
// run's id: the scheduler places no other pod there while it runs (the
// run's own pods tolerate it). The node is labelled with the run
// (engine.LabelRun) and the server's instance (engine.LabelInstance), so
// that another Limit Lab server, or this one after a crash, knows whose
// it is; whether the hold is alive is its lease's to say.
const TaintRun = "io.limitlab/run"

// taken says whether the node is a run's, and whose.
func taken(n *corev1.Node) (runID, instance string, ok bool) {
	runID, ok = n.Labels[engine.LabelRun]
	return runID, n.Labels[engine.LabelInstance], ok
}

// updateNode reads a node, lets change alter it, and writes it back if
// change says to, again on a conflicting write.
func updateNode(ctx context.Context, c *client, node string, change func(n *corev1.Node) (write bool, err error)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if write, err := change(n); err != nil || !write {
			return err
		}
		_, err = c.cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// withoutRunTaint is a node's taints less the run taint.
func withoutRunTaint(ts []corev1.Taint) []corev1.Taint {
	return slices.DeleteFunc(ts, func(t corev1.Taint) bool { return t.Key == TaintRun })
}

// unmark takes a run's label and taint off the node, if whose says the
// node's mark is the one to take off.
func unmark(ctx context.Context, c *client, node string, whose func(*corev1.Node) bool) error {
	err := updateNode(ctx, c, node, func(n *corev1.Node) (bool, error) {
		_, _, labelled := taken(n)
		if !labelled && len(withoutRunTaint(slices.Clone(n.Spec.Taints))) == len(n.Spec.Taints) || !whose(n) {
			return false, nil
		}
		delete(n.Labels, engine.LabelRun)
		delete(n.Labels, engine.LabelInstance)
		n.Spec.Taints = withoutRunTaint(n.Spec.Taints)
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("kube: give back node %s: %w", node, err)
	}
	return nil
}

// toleration lets a run's pods on the node it took.
func toleration(runID string) corev1.Toleration {
	return corev1.Toleration{Key: TaintRun, Operator: corev1.TolerationOpEqual, Value: runID, Effect: corev1.TaintEffectNoSchedule}
}
