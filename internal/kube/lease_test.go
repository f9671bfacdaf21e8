package kube

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func fakeLease(node, who string, renewed time.Time) *coordinationv1.Lease {
	ttl := int32(LeaseTTL / time.Second)
	at := metav1.NewMicroTime(renewed)
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: leaseName(node), Namespace: "limitlab"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &who, LeaseDurationSeconds: &ttl, AcquireTime: &at, RenewTime: &at}}
}

// marked is a node with a run's label and taint.
func marked(run, instance string) *corev1.Node {
	n := fakeNode("n1", true, false, bootID)
	n.Labels = map[string]string{engine.LabelRun: run, engine.LabelInstance: instance}
	n.Spec.Taints = []corev1.Taint{{Key: TaintRun, Value: run, Effect: corev1.TaintEffectNoSchedule}}
	return n
}

// TestHoldOf reads every kind of hold: a node's mark and its lease.
func TestHoldOf(t *testing.T) {
	now := time.Now()
	tainted := fakeNode("n1", true, false, "")
	tainted.Spec.Taints = []corev1.Taint{{Key: TaintRun, Value: "forged", Effect: corev1.TaintEffectNoSchedule}}
	for _, tc := range []struct {
		name  string
		node  *corev1.Node
		lease *coordinationv1.Lease
		want  hold
		run   string
	}{
		{"a free node", fakeNode("n1", true, false, ""), nil, holdFree, ""},
		{"our run, its lease live", marked("r1", "me"), fakeLease("n1", "me/r1", now), holdOurs, "r1"},
		{"another server's run, its lease live", marked("r2", "them"), fakeLease("n1", "them/r2", now.Add(-LeaseTTL/2)), holdOthers, "r2"},
		{"another server's run, its lease expired", marked("r2", "them"), fakeLease("n1", "them/r2", now.Add(-2*LeaseTTL)), holdStale, "r2"},
		{"a mark without a lease", marked("r3", "them"), nil, holdStale, "r3"},
		{"a forged taint alone", tainted, nil, holdStale, "forged"},
		{"a live lease on a node not yet marked", fakeNode("n1", true, false, ""), fakeLease("n1", "them/r4", now), holdOthers, "r4"},
		{"an expired lease and no mark", fakeNode("n1", true, false, ""), fakeLease("n1", "them/r4", now.Add(-time.Hour)), holdFree, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, h := holdOf(tc.node, tc.lease, "me", now)
			if got != tc.want || h.run != tc.run {
				t.Errorf("hold %s of run %q, want %s of %q", got, h.run, tc.want, tc.run)
			}
		})
	}
}

// TestAForgedTaintWithAnExpiredLeaseIsCleared: a node marked by a server
// that stopped renewing its lease (or never had one) is cleared by the
// next server that looks, and taken; a live lease of another's is
// refused, naming its run.
func TestAForgedTaintWithAnExpiredLeaseIsCleared(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		lease *coordinationv1.Lease
	}{
		{"expired", fakeLease("n1", "dead-server/r9", time.Now().Add(-10*time.Minute))},
		{"none", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewSimpleClientset(marked("r9", "dead-server"))
			if tc.lease != nil {
				_, _ = cs.CoordinationV1().Leases("limitlab").Create(ctx, tc.lease, metav1.CreateOptions{})
			}
			cl := fakeEngine(cs, t.TempDir(), "n1")
			if _, err := cl.pickNode(ctx); err != nil {
				t.Fatalf("a node of a dead server's run: %v", err)
			}
			got, _ := cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
			if _, _, ok := taken(got); ok || len(got.Spec.Taints) != 0 {
				t.Errorf("the dead server's mark stayed: %v %v", got.Labels, got.Spec.Taints)
			}
			if l, _ := readLease(ctx, cl.c, "n1"); l != nil {
				t.Errorf("the dead server's lease stayed: %+v", l.Spec)
			}
		})
	}

	// A live lease of another server's is refused, and left alone.
	cs := fake.NewSimpleClientset(marked("r2", "them"))
	_, _ = cs.CoordinationV1().Leases("limitlab").Create(ctx, fakeLease("n1", "them/r2", time.Now()), metav1.CreateOptions{})
	cl := fakeEngine(cs, t.TempDir(), "n1")
	if _, err := cl.pickNode(ctx); err == nil || !strings.Contains(err.Error(), "taken by run r2 of the Limit Lab server them") {
		t.Errorf("a node another server's live run holds: %v", err)
	}
	if err := cl.lease.take(ctx, "mine"); err == nil || !strings.Contains(err.Error(), "taken by run r2") {
		t.Errorf("taking it all the same: %v", err)
	}
	if got, _ := cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{}); got.Labels[engine.LabelRun] != "r2" {
		t.Errorf("the other server's mark was changed: %v", got.Labels)
	}
}

// TestALeaseIsRenewedUntilReleased: a run's lease names it, is renewed
// while it holds the node, and goes with the node's mark when it is
// released.
func TestALeaseIsRenewedUntilReleased(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewSimpleClientset(fakeNode("n1", true, false, bootID))
	cl := fakeEngine(cs, t.TempDir(), "n1")
	if err := cl.lease.take(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	l, err := readLease(ctx, cl.c, "n1")
	if err != nil || l == nil || *l.Spec.HolderIdentity != "me/r1" {
		t.Fatalf("lease after take: %+v %v", l, err)
	}
	first := l.Spec.RenewTime.Time
	// The renewer's own pace is LeaseTTL/3; one run at a test's pace.
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); renew(rctx, cl.c, "n1", "r1", 10*time.Millisecond) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, _ = readLease(ctx, cl.c, "n1")
		if l.Spec.RenewTime.After(first) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	<-done
	if !l.Spec.RenewTime.After(first) {
		t.Error("the lease was not renewed")
	}
	if err := cl.lease.release(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if l, _ := readLease(ctx, cl.c, "n1"); l != nil {
		t.Errorf("the lease after release: %+v", l.Spec)
	}
	n, _ := cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if _, _, ok := taken(n); ok || len(n.Spec.Taints) != 0 {
		t.Errorf("the node after release: %v %v", n.Labels, n.Spec.Taints)
	}
}

// TestLeaseTransitions: every state and event of a hold, through its one
// transition function.
func TestLeaseTransitions(t *testing.T) {
	for _, tc := range []struct {
		from leaseState
		ev   leaseEvent
		to   leaseState
		ok   bool
	}{
		{leaseIdle, leaseTaken, leaseHeld, true},
		{leaseIdle, leaseReleased, leaseIdle, true},
		{leaseIdle, leaseGone, leaseIdle, false},
		{leaseHeld, leaseTaken, leaseHeld, false},
		{leaseHeld, leaseReleased, leaseIdle, true},
		{leaseHeld, leaseGone, leaseLost, true},
		{leaseLost, leaseTaken, leaseHeld, true},
		{leaseLost, leaseReleased, leaseIdle, true},
		{leaseLost, leaseGone, leaseLost, false},
	} {
		if to, ok := tc.from.transition(tc.ev); to != tc.to || ok != tc.ok {
			t.Errorf("%s, %s: %s %v; want %s %v", tc.from, tc.ev, to, ok, tc.to, tc.ok)
		}
	}
}

// TestAHoldsLife walks a hold through its states on client-go's fake
// clientset: taken by a run; refused to a second; lost when another party
// deletes its lease while it runs; released; taken again. Each step
// checks the hold's state and the lease the cluster holds.
func TestAHoldsLife(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewSimpleClientset(fakeNode("n1", true, false, bootID))
	e := fakeEngine(cs, t.TempDir(), "n1")
	e.lease.every = 5 * time.Millisecond
	deleteLease := func() error {
		return cs.CoordinationV1().Leases("limitlab").Delete(ctx, leaseName("n1"), metav1.DeleteOptions{})
	}
	for _, step := range []struct {
		name    string
		do      func() error
		wantErr string
		state   leaseState
		run     string
		holder  string // the lease's holder on the cluster; "" none
	}{
		{"a run takes the node", func() error { return e.lease.ensure(ctx, "r1", slog.Default()) }, "", leaseHeld, "r1", "me/r1"},
		{"the same run again", func() error { return e.lease.ensure(ctx, "r1", slog.Default()) }, "", leaseHeld, "r1", "me/r1"},
		{"a second run is refused", func() error { return e.lease.take(ctx, "r2") }, "taken by run r1", leaseHeld, "r1", "me/r1"},
		{"another party deletes the lease", func() error {
			if err := deleteLease(); err != nil {
				return err
			}
			return poll(ctx, "the hold to be lost", 10*time.Second, func(context.Context) (bool, error) {
				st, _ := e.lease.State()
				return st == leaseLost, nil
			})
		}, "", leaseLost, "r1", ""},
		{"the run releases it", func() error { return e.lease.release(ctx, "r1") }, "", leaseIdle, "", ""},
		{"a releasing nobody holds", func() error { return e.lease.release(ctx, "") }, "", leaseIdle, "", ""},
		{"a second run takes it", func() error { return e.lease.ensure(ctx, "r2", slog.Default()) }, "", leaseHeld, "r2", "me/r2"},
		{"the server lets it go", func() error { return e.ReapInstance(ctx, "me", nil) }, "", leaseIdle, "", ""},
	} {
		err := step.do()
		if step.wantErr == "" && err != nil || step.wantErr != "" && (err == nil || !strings.Contains(err.Error(), step.wantErr)) {
			t.Fatalf("%s: %v, want %q", step.name, err, step.wantErr)
		}
		if st, run := e.lease.State(); st != step.state || run != step.run {
			t.Errorf("%s: hold %s of %q, want %s of %q", step.name, st, run, step.state, step.run)
		}
		l, err := readLease(ctx, e.c, "n1")
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if l != nil {
			got = *l.Spec.HolderIdentity
		}
		if got != step.holder {
			t.Errorf("%s: the lease's holder %q, want %q", step.name, got, step.holder)
		}
	}
}

// TestPoll: the one wait waits as long as it is given, past its largest
// interval, and says what did not happen in time.
func TestPoll(t *testing.T) {
	ctx := context.Background()
	calls := 0
	began := time.Now()
	err := poll(ctx, "the thing", 4*time.Second, func(context.Context) (bool, error) {
		calls++
		return time.Since(began) > 2*time.Second, nil
	})
	if err != nil {
		t.Errorf("a condition met after 2 s, within 4 s: %v after %d calls", err, calls)
	}
	err = poll(ctx, "the thing", 300*time.Millisecond, func(context.Context) (bool, error) { return false, nil })
	if err == nil || !strings.Contains(err.Error(), "the thing: not within 300ms") {
		t.Errorf("a condition never met: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := poll(cctx, "the thing", time.Second, func(context.Context) (bool, error) { return false, nil }); err != context.Canceled {
		t.Errorf("a cancelled wait: %v", err)
	}
}

// TestTheShownPodStartsAtOnce: the pod YAML a lane shows (its copy
// button's) carries no start barrier, which only this server would let
// go; the pod the server makes does.
func TestTheShownPodStartsAtOnce(t *testing.T) {
	spec, errs := experiments.Parse([]byte(`{"lanes": [{"name": "a", "workload": {"kind": "spin", "seconds": 3}, "resources": {"limits": {"cpu": "500m", "memory": "64Mi"}}}]}`))
	if errs != nil {
		t.Fatal(errs)
	}
	plan, errs := experiments.Validate(spec, specs.Host{NCPU: 2, Kubernetes: true})
	if errs != nil {
		t.Fatal(errs)
	}
	cs := fake.NewSimpleClientset(fakeNode("n1", true, false, bootID))
	e := fakeEngine(cs, t.TempDir(), "n1")
	nl := engine.NewLane{RunID: "r1", Index: 0, Instance: "me", Image: "limitlab-workload:x", Lane: plan.Lanes[0], Begin: true}
	c, err := e.Create(context.Background(), nl)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(c.Manifest, "begin-file") || !strings.Contains(c.Manifest, "spin") {
		t.Errorf("the shown pod:\n%s", c.Manifest)
	}
	if a := args(nl, "10.0.0.1"); !strings.Contains(strings.Join(a, " "), "-begin-file") {
		t.Errorf("the pod the server makes runs %q, without the barrier", a)
	}
	_ = e.lease.release(context.Background(), "r1")
}
