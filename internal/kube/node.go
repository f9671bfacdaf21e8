package kube

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/limitlab/limitlab/internal/engine"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// TaintRun is the taint a run puts on the node it takes, its value the
// run's id: the scheduler places no other pod there while it runs (the
// run's own pods tolerate it). The node is labelled with the run
// (engine.LabelRun) and the server's instance (engine.LabelInstance), so
// that another Limit Lab server, or this one after a crash, knows whose
// it is.
const TaintRun = "io.limitlab/run"

// taken says whether the node is a run's, and whose.
func taken(n *corev1.Node) (runID, instance string, ok bool) {
	runID, ok = n.Labels[engine.LabelRun]
	return runID, n.Labels[engine.LabelInstance], ok
}

// updateNode reads the run's node, lets change alter it, and writes it
// back if change says to, again on a conflicting write.
func (c *Cluster) updateNode(ctx context.Context, change func(n *corev1.Node) (write bool, err error)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.cs.CoreV1().Nodes().Get(ctx, c.Node(), metav1.GetOptions{})
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

// take marks the node as runID's for its time. A node another run holds
// is refused, naming the run and its server.
func (c *Cluster) take(ctx context.Context, runID string) error {
	node := c.Node()
	err := c.updateNode(ctx, func(n *corev1.Node) (bool, error) {
		if id, inst, ok := taken(n); ok && id != runID {
			return false, fmt.Errorf("node %s is taken by run %s of the Limit Lab server %s", node, id, inst)
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[engine.LabelRun], n.Labels[engine.LabelInstance] = runID, c.instance
		n.Spec.Taints = append(withoutRunTaint(n.Spec.Taints), corev1.Taint{Key: TaintRun, Value: runID, Effect: corev1.TaintEffectNoSchedule})
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("kube: take node %s for run %s: %w", node, runID, err)
	}
	c.mu.Lock()
	c.takenBy = runID
	c.mu.Unlock()
	return nil
}

// release gives the node back: its run's label and taint go, if runID
// (or, with runID empty, any run of this server) still holds it.
func (c *Cluster) release(ctx context.Context, runID string) error {
	err := c.updateNode(ctx, func(n *corev1.Node) (bool, error) {
		id, inst, ok := taken(n)
		if !ok || inst != c.instance || runID != "" && id != runID {
			return false, nil // not ours to give back
		}
		delete(n.Labels, engine.LabelRun)
		delete(n.Labels, engine.LabelInstance)
		n.Spec.Taints = withoutRunTaint(n.Spec.Taints)
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("kube: release node %s: %w", c.Node(), err)
	}
	c.mu.Lock()
	if runID == "" || c.takenBy == runID {
		c.takenBy = ""
	}
	c.mu.Unlock()
	return nil
}

// ensureTaken takes the node for a run's first lane.
func (c *Cluster) ensureTaken(ctx context.Context, runID string, log *slog.Logger) error {
	c.mu.Lock()
	have := c.takenBy == runID
	c.mu.Unlock()
	if have {
		return nil
	}
	if err := c.take(ctx, runID); err != nil {
		return err
	}
	log.Info("node taken", slog.String("node", c.Node()), slog.String("run", runID))
	return nil
}

// toleration lets a run's pods on the node it took.
func toleration(runID string) corev1.Toleration {
	return corev1.Toleration{Key: TaintRun, Operator: corev1.TolerationOpEqual, Value: runID, Effect: corev1.TaintEffectNoSchedule}
}
