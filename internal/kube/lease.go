package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// A run's hold on its node is a coordination.k8s.io Lease in the lanes'
// namespace, one a node (leaseName), held by "<instance>/<run>" and
// renewed by its server every LeaseTTL/3 while the run lasts. The node's
// label and taint (node.go) only tell the scheduler and a reader; the
// lease says whether the hold is still alive. A mark whose lease expired,
// or never had one, is its dead server's: any Limit Lab server clears it,
// so no node is held for ever.

// LeaseTTL is how long a hold lasts once its server stops renewing it.
const LeaseTTL = 60 * time.Second

// leaseName is the lease of a node's hold.
func leaseName(node string) string { return "limitlab-node-" + node }

// hold is a node's hold as a server sees it.
type hold int

const (
	holdFree   hold = iota // no run's mark, no live lease
	holdOurs               // this server's run: its lease is live
	holdOthers             // another server's run: its lease is live
	holdStale              // a run's mark whose lease expired or is missing
)

func (h hold) String() string {
	return [...]string{"free", "ours", "another server's", "stale"}[h]
}

// holder is who holds a lease: a server's instance and its run.
type holder struct{ instance, run string }

func (h holder) identity() string { return h.instance + "/" + h.run }

func parseHolder(s string) holder {
	inst, run, _ := strings.Cut(s, "/")
	return holder{inst, run}
}

// holdOf is the one reading of a node's hold, from the node's mark and its
// lease (nil if it has none) at now, for the server instance.
func holdOf(n *corev1.Node, l *coordinationv1.Lease, instance string, now time.Time) (hold, holder) {
	if l != nil && l.Spec.HolderIdentity != nil && !leaseExpired(l, now) {
		h := parseHolder(*l.Spec.HolderIdentity)
		if h.instance == instance {
			return holdOurs, h
		}
		return holdOthers, h
	}
	if run, inst, ok := taken(n); ok {
		return holdStale, holder{inst, run}
	}
	for _, t := range n.Spec.Taints {
		if t.Key == TaintRun {
			return holdStale, holder{run: t.Value}
		}
	}
	return holdFree, holder{}
}

// leaseExpired says whether a lease's holder stopped renewing it more
// than its duration ago.
func leaseExpired(l *coordinationv1.Lease, now time.Time) bool {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return true
	}
	return now.After(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second))
}

// heldBy is the refusal of a node another run holds.
func heldBy(node string, h holder) error {
	return fmt.Errorf("node %s is taken by run %s of the Limit Lab server %s", node, h.run, h.instance)
}

// lease reads a node's lease; nil if it has none.
func (c *Cluster) lease(ctx context.Context, node string) (*coordinationv1.Lease, error) {
	l, err := c.cs.CoordinationV1().Leases(c.ns).Get(ctx, leaseName(node), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return l, err
}

// claim takes the node's lease for runID, or refuses, naming the run that
// holds it. A stale hold is taken over; a conflicting write is tried
// again, read afresh.
func (c *Cluster) claim(ctx context.Context, node, runID string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		l, err := c.lease(ctx, node)
		if err != nil {
			return err
		}
		now := time.Now()
		switch st, h := holdOf(n, l, c.instance, now); {
		case st == holdOthers, st == holdOurs && h.run != runID:
			return heldBy(node, h)
		}
		ttl := int32(LeaseTTL / time.Second)
		who := holder{c.instance, runID}.identity()
		at := metav1.NewMicroTime(now)
		if l == nil {
			_, err = c.cs.CoordinationV1().Leases(c.ns).Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: leaseName(node), Labels: map[string]string{"app.kubernetes.io/name": "limitlab"}},
				Spec:       coordinationv1.LeaseSpec{HolderIdentity: &who, LeaseDurationSeconds: &ttl, AcquireTime: &at, RenewTime: &at},
			}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				// Another server created it meanwhile: read it again.
				return apierrors.NewConflict(coordinationv1.Resource("leases"), leaseName(node), err)
			}
			return err
		}
		if l.Spec.AcquireTime == nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != who {
			l.Spec.AcquireTime = &at
		}
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &who, &ttl, &at
		_, err = c.cs.CoordinationV1().Leases(c.ns).Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
}

// renew keeps runID's lease on the node alive until ctx ends or the lease
// is no longer its: every LeaseTTL/3, its renew time is moved to now.
func (c *Cluster) renew(ctx context.Context, node, runID string, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			l, err := c.lease(ctx, node)
			if err != nil || l == nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != (holder{c.instance, runID}).identity() {
				return errors.Join(err, errLost)
			}
			now := metav1.NewMicroTime(time.Now())
			l.Spec.RenewTime = &now
			_, err = c.cs.CoordinationV1().Leases(c.ns).Update(ctx, l, metav1.UpdateOptions{})
			return err
		})
		if errors.Is(err, errLost) {
			return
		}
	}
}

var errLost = errors.New("the lease is no longer this run's")

// dropLease deletes the node's lease if h holds it (any run of h's
// instance if h.run is empty), or if it expired.
func (c *Cluster) dropLease(ctx context.Context, node string, h holder) error {
	l, err := c.lease(ctx, node)
	if err != nil || l == nil {
		return err
	}
	mine := l.Spec.HolderIdentity != nil && parseHolder(*l.Spec.HolderIdentity).instance == h.instance &&
		(h.run == "" || parseHolder(*l.Spec.HolderIdentity).run == h.run)
	if !mine && !leaseExpired(l, time.Now()) {
		return nil
	}
	rv := l.ResourceVersion
	err = c.cs.CoordinationV1().Leases(c.ns).Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or taken meanwhile: not ours to delete
	}
	return err
}

// clearStale reads a node's hold. Another server's live hold is refused,
// naming its run; a stale one (its server stopped renewing it, or never
// had a lease) is cleared: the mark and the taint go, and the lease.
func (c *Cluster) clearStale(ctx context.Context, n corev1.Node) error {
	l, err := c.lease(ctx, n.Name)
	if err != nil {
		return fmt.Errorf("kube: node %s's lease: %w", n.Name, err)
	}
	switch st, h := holdOf(&n, l, c.instance, time.Now()); st {
	case holdOthers:
		return fmt.Errorf("kube: %w", heldBy(n.Name, h))
	case holdStale:
		if err := c.unmark(ctx, n.Name, func(*corev1.Node) bool { return true }); err != nil {
			return err
		}
		return c.dropLease(ctx, n.Name, holder{})
	}
	return nil
}
