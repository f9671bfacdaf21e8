package kube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// A run's hold on its node is a coordination.k8s.io Lease in the lanes'
// namespace, one a node (leaseName), held by "<instance>/<run>" and
// renewed by its server every LeaseTTL/3 while the run lasts. The node's
// label and taint (TaintRun, mark.go) only tell the scheduler and a
// reader; the lease says whether the hold is still alive. A mark whose
// lease expired, or never had one, is its dead server's: any Limit Lab
// server clears it, so no node is held for ever.

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

// leaseState is where a server's hold on its engine's node stands.
type leaseState int

const (
	leaseIdle leaseState = iota // no run of this engine holds the node
	leaseHeld                   // a run holds it: its lease is renewed
	leaseLost                   // the run's lease was taken or deleted while it ran
)

func (s leaseState) String() string { return [...]string{"idle", "held", "lost"}[s] }

// leaseEvent is what moves a hold from one state to another.
type leaseEvent int

const (
	leaseTaken    leaseEvent = iota // a run took the node: lease, mark and policy
	leaseReleased                   // its run gave it back, or the server let it go
	leaseGone                       // its renewer found the lease no longer the run's
)

func (e leaseEvent) String() string { return [...]string{"taken", "released", "gone"}[e] }

// transition is the one place a hold's state changes: ok is false for an
// event its state does not take (a node taken twice, a lease lost that
// was not held).
func (s leaseState) transition(e leaseEvent) (next leaseState, ok bool) {
	switch {
	case e == leaseTaken && s != leaseHeld:
		return leaseHeld, true
	case e == leaseReleased:
		return leaseIdle, true
	case e == leaseGone && s == leaseHeld:
		return leaseLost, true
	}
	return s, false
}

// nodeLease is an engine's hold on its node for one run at a time: the
// node it probed, the run that holds it, and the renewer of its lease.
type nodeLease struct {
	c *client
	// every is how often the lease is renewed: LeaseTTL/3 if zero.
	every time.Duration

	mu        sync.Mutex
	node      string // the node runs take, chosen by the engine's probe
	state     leaseState
	run       string // the run that holds the node, while held or lost
	stopRenew func() // stops the renewer, and waits for it
}

// State is the hold's state, and the run that holds the node.
func (l *nodeLease) State() (leaseState, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state, l.run
}

// Node is the node runs take ("" before a probe).
func (l *nodeLease) Node() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.node
}

// use sets the node runs take, as a probe found it; a node held keeps its
// run's node until it is released.
func (l *nodeLease) use(node string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state == leaseIdle {
		l.node = node
	}
}

// to moves the hold's state by e for run.
func (l *nodeLease) to(e leaseEvent, run string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	next, ok := l.state.transition(e)
	if !ok {
		return fmt.Errorf("kube: node %s's hold is %s (run %s): it cannot be %s", l.node, l.state, l.run, e)
	}
	l.state = next
	if next == leaseIdle {
		run = ""
	}
	l.run = run
	return nil
}

// ensure takes the node for a run's first lane; a run that holds it
// already has it.
func (l *nodeLease) ensure(ctx context.Context, runID string, log *slog.Logger) error {
	l.mu.Lock()
	have := l.state == leaseHeld && l.run == runID
	l.mu.Unlock()
	if have {
		return nil
	}
	if err := l.take(ctx, runID); err != nil {
		return err
	}
	log.Info("node taken", slog.String("node", l.Node()), slog.String("run", runID), slog.Duration("lease", LeaseTTL))
	return nil
}

// take holds the node for runID's time: its lease first, which refuses a
// node another live run holds, naming the run and its server; then the
// label and taint that keep the scheduler's other pods away, and the
// run's network policy. The lease is renewed until release.
func (l *nodeLease) take(ctx context.Context, runID string) error {
	node := l.Node()
	if node == "" {
		return errors.New("kube: no node probed")
	}
	if err := claim(ctx, l.c, node, runID); err != nil {
		return fmt.Errorf("kube: take node %s for run %s: %w", node, runID, err)
	}
	err := updateNode(ctx, l.c, node, func(n *corev1.Node) (bool, error) {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[engine.LabelRun], n.Labels[engine.LabelInstance] = runID, l.c.cfg.Instance
		n.Spec.Taints = append(withoutRunTaint(n.Spec.Taints), corev1.Taint{Key: TaintRun, Value: runID, Effect: corev1.TaintEffectNoSchedule})
		return true, nil
	})
	if err != nil {
		_ = dropLease(context.WithoutCancel(ctx), l.c, node, holder{l.c.cfg.Instance, runID})
		return fmt.Errorf("kube: take node %s for run %s: %w", node, runID, err)
	}
	if err := l.to(leaseTaken, runID); err != nil {
		_ = l.unmarkAndDrop(context.WithoutCancel(ctx), node, runID)
		return err
	}
	if err := isolate(ctx, l.c, runID); err != nil {
		_ = l.release(context.WithoutCancel(ctx), runID)
		return err
	}
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	// The renewer lives until release stops it, or the lease is lost.
	go func() {
		defer close(done)
		if renew(rctx, l.c, node, runID, cmp.Or(l.every, LeaseTTL/3)) {
			_ = l.to(leaseGone, runID)
		}
	}()
	l.mu.Lock()
	l.stopRenew = func() { stop(); <-done }
	l.mu.Unlock()
	return nil
}

// release gives the node back: its run's label, taint, lease and network
// policy go, if runID (or, with runID empty, any run of this server) still
// holds it.
func (l *nodeLease) release(ctx context.Context, runID string) error {
	l.mu.Lock()
	var stop func()
	mine := runID == "" || l.run == runID
	if mine {
		stop, l.stopRenew = l.stopRenew, nil
	}
	l.mu.Unlock()
	if stop != nil {
		stop()
	}
	if err := l.unmarkAndDrop(ctx, l.Node(), runID); err != nil {
		return err
	}
	if mine {
		return l.to(leaseReleased, "")
	}
	return nil
}

// unmarkAndDrop takes runID's mark (any run of this server's, with runID
// empty) off the node, and its lease and network policy.
func (l *nodeLease) unmarkAndDrop(ctx context.Context, node, runID string) error {
	held := runID // the run whose mark goes: with runID empty, whichever of ours
	err := unmark(ctx, l.c, node, func(n *corev1.Node) bool {
		id, inst, ok := taken(n)
		mine := ok && inst == l.c.cfg.Instance && (runID == "" || id == runID)
		if mine {
			held = id
		}
		return mine
	})
	err = errors.Join(err, dropLease(ctx, l.c, node, holder{l.c.cfg.Instance, runID}))
	if held != "" {
		err = errors.Join(err, unisolate(ctx, l.c, held))
	}
	return err
}

// The API's side of a hold, on any node: the functions below read and
// write one node's mark and lease, for an engine's hold and for a probe
// that clears a dead server's.

// readLease reads a node's lease; nil if it has none.
func readLease(ctx context.Context, c *client, node string) (*coordinationv1.Lease, error) {
	l, err := c.cs.CoordinationV1().Leases(c.cfg.Namespace).Get(ctx, leaseName(node), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return l, err
}

// claim takes the node's lease for runID, or refuses, naming the run that
// holds it. A stale hold is taken over; a conflicting write is tried
// again, read afresh.
func claim(ctx context.Context, c *client, node, runID string) error {
	leases := c.cs.CoordinationV1().Leases(c.cfg.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		l, err := readLease(ctx, c, node)
		if err != nil {
			return err
		}
		now := time.Now()
		switch st, h := holdOf(n, l, c.cfg.Instance, now); {
		case st == holdOthers, st == holdOurs && h.run != runID:
			return heldBy(node, h)
		}
		ttl := int32(LeaseTTL / time.Second)
		who := holder{c.cfg.Instance, runID}.identity()
		at := metav1.NewMicroTime(now)
		if l == nil {
			_, err = leases.Create(ctx, &coordinationv1.Lease{
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
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
}

// renew keeps runID's lease on the node alive until ctx ends or the lease
// is no longer its (lost is then true): every interval, its renew time is
// moved to now.
func renew(ctx context.Context, c *client, node, runID string, every time.Duration) (lost bool) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			l, err := readLease(ctx, c, node)
			if err != nil || l == nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != (holder{c.cfg.Instance, runID}).identity() {
				return errors.Join(err, errLost)
			}
			now := metav1.NewMicroTime(time.Now())
			l.Spec.RenewTime = &now
			_, err = c.cs.CoordinationV1().Leases(c.cfg.Namespace).Update(ctx, l, metav1.UpdateOptions{})
			return err
		})
		if errors.Is(err, errLost) && ctx.Err() == nil {
			return true
		}
	}
}

var errLost = errors.New("the lease is no longer this run's")

// dropLease deletes the node's lease if h holds it (any run of h's
// instance if h.run is empty), or if it expired.
func dropLease(ctx context.Context, c *client, node string, h holder) error {
	l, err := readLease(ctx, c, node)
	if err != nil || l == nil {
		return err
	}
	mine := l.Spec.HolderIdentity != nil && parseHolder(*l.Spec.HolderIdentity).instance == h.instance &&
		(h.run == "" || parseHolder(*l.Spec.HolderIdentity).run == h.run)
	if !mine && !leaseExpired(l, time.Now()) {
		return nil
	}
	rv := l.ResourceVersion
	err = c.cs.CoordinationV1().Leases(c.cfg.Namespace).Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or taken meanwhile: not ours to delete
	}
	return err
}

// clearStale reads a node's hold. Another server's live hold is refused,
// naming its run; a stale one (its server stopped renewing it, or never
// had a lease) is cleared: the mark and the taint go, and the lease.
func clearStale(ctx context.Context, c *client, n corev1.Node) error {
	l, err := readLease(ctx, c, n.Name)
	if err != nil {
		return fmt.Errorf("kube: node %s's lease: %w", n.Name, err)
	}
	switch st, h := holdOf(&n, l, c.cfg.Instance, time.Now()); st {
	case holdOthers:
		return fmt.Errorf("kube: %w", heldBy(n.Name, h))
	case holdStale:
		if err := unmark(ctx, c, n.Name, func(*corev1.Node) bool { return true }); err != nil {
			return err
		}
		return dropLease(ctx, c, n.Name, holder{})
	}
	return nil
}
