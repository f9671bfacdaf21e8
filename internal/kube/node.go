package kube

import (
	"context"
	"errors"
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
// it is; whether the hold is alive is its lease's to say (lease.go).
const TaintRun = "io.limitlab/run"

// taken says whether the node is a run's, and whose.
func taken(n *corev1.Node) (runID, instance string, ok bool) {
	runID, ok = n.Labels[engine.LabelRun]
	return runID, n.Labels[engine.LabelInstance], ok
}

// updateNode reads a node, lets change alter it, and writes it back if
// change says to, again on a conflicting write.
func (c *Cluster) updateNode(ctx context.Context, node string, change func(n *corev1.Node) (write bool, err error)) error {
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
func (c *Cluster) unmark(ctx context.Context, node string, whose func(*corev1.Node) bool) error {
	err := c.updateNode(ctx, node, func(n *corev1.Node) (bool, error) {
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

// take holds the node for runID's time: its lease first (lease.go), which
// refuses a node another live run holds, naming the run and its server;
// then the label and taint that keep the scheduler's other pods away. The
// lease is renewed until release.
func (c *Cluster) take(ctx context.Context, runID string) error {
	node := c.Node()
	if err := c.claim(ctx, node, runID); err != nil {
		return fmt.Errorf("kube: take node %s for run %s: %w", node, runID, err)
	}
	err := c.updateNode(ctx, node, func(n *corev1.Node) (bool, error) {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[engine.LabelRun], n.Labels[engine.LabelInstance] = runID, c.instance
		n.Spec.Taints = append(withoutRunTaint(n.Spec.Taints), corev1.Taint{Key: TaintRun, Value: runID, Effect: corev1.TaintEffectNoSchedule})
		return true, nil
	})
	if err != nil {
		_ = c.dropLease(context.WithoutCancel(ctx), node, holder{c.instance, runID})
		return fmt.Errorf("kube: take node %s for run %s: %w", node, runID, err)
	}
	if err := c.isolate(ctx, runID); err != nil {
		_ = c.release(context.WithoutCancel(ctx), runID)
		return err
	}
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	// The renewer lives until release stops it, or the lease is lost.
	go func() {
		defer close(done)
		c.renew(rctx, node, runID, LeaseTTL/3)
	}()
	c.mu.Lock()
	c.takenBy, c.stopRenew = runID, func() { stop(); <-done }
	c.mu.Unlock()
	return nil
}

// release gives the node back: its run's label, taint and lease go, if
// runID (or, with runID empty, any run of this server) still holds it.
func (c *Cluster) release(ctx context.Context, runID string) error {
	c.mu.Lock()
	stop := c.stopRenew
	if runID == "" || c.takenBy == runID {
		c.stopRenew = nil
	} else {
		stop = nil
	}
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
	node := c.Node()
	held := runID // the run whose mark goes: with runID empty, whichever of ours
	err := c.unmark(ctx, node, func(n *corev1.Node) bool {
		id, inst, ok := taken(n)
		mine := ok && inst == c.instance && (runID == "" || id == runID)
		if mine {
			held = id
		}
		return mine
	})
	err = errors.Join(err, c.dropLease(ctx, node, holder{c.instance, runID}))
	if held != "" {
		err = errors.Join(err, c.unisolate(ctx, held))
	}
	if err != nil {
		return err
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
	log.Info("node taken", slog.String("node", c.Node()), slog.String("run", runID), slog.Duration("lease", LeaseTTL))
	return nil
}

// toleration lets a run's pods on the node it took.
func toleration(runID string) corev1.Toleration {
	return corev1.Toleration{Key: TaintRun, Operator: corev1.TolerationOpEqual, Value: runID, Effect: corev1.TaintEffectNoSchedule}
}
