package runner

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// slowKubelet resizes as a kubelet does that has not applied a resize
// by the end of Resize's wait, and applies it while AwaitResize follows.
type slowKubelet struct {
	awaited, gaveUp atomic.Int32
	settle          chan struct{}
}

func (k *slowKubelet) Resize(ctx context.Context, id string, to specs.Pod) (engine.Resized, error) {
	return engine.Resized{State: engine.ResizeInProgress, Message: "kubelet is slow", Command: "kubectl patch pod " + id}, nil
}

func (k *slowKubelet) AwaitResize(ctx context.Context, id string, to specs.Pod) (engine.Resized, error) {
	k.awaited.Add(1)
	select {
	case <-k.settle:
		return engine.Resized{State: engine.ResizeDone, Applied: to, Command: "kubectl patch pod " + id}, nil
	case <-ctx.Done():
		k.gaveUp.Add(1)
		return engine.Resized{State: engine.ResizeInProgress}, ctx.Err()
	}
}

// podRun is a run of one pod lane, running, with limits.cpu 500m.
func podRun(t *testing.T) *Run {
	t.Helper()
	spec := specs.Spec{Name: "pod", Lanes: []specs.Lane{{Name: "svc", Workload: specs.Workload{Kind: specs.KindSpin, Seconds: 1},
		Resources: &specs.PodResources{Requests: specs.PodResourceList{CPU: "250m"}, Limits: specs.PodResourceList{CPU: "500m"}}}}}
	host := specs.Host{NCPU: 2, Kubernetes: true, Unsupported: map[string]string{}}
	plan, errs := experiments.Validate(spec, host)
	if errs != nil {
		t.Fatal(errs)
	}
	r := New(&Env{Host: engine.KubernetesHost(engine.KubernetesNode{Name: "n", NCPU: 2})}, "r1", "ann", spec, plan)
	pod := plan.Lanes[0].Pod
	applied := plan.Lanes[0].Resources
	r.st.start = time.Now()
	l := r.st.lanes[0]
	l.state, l.id, l.pod, l.applied = LaneRunning, "pod-1", pod, &applied
	return r
}

// A resize kubelet has not applied when the change is answered is
// followed: once kubelet applies it, the change's record says done and
// when, and the lane's limits are the new ones. A run that ends first
// stops following it.
func TestAResizeInProgressIsFollowedToItsEnd(t *testing.T) {
	r := podRun(t)
	k := &slowKubelet{settle: make(chan struct{})}
	change := specs.Limits{Resources: &specs.PodResources{Limits: specs.PodResourceList{CPU: "1500m"}}}
	rec, err := resize(context.Background(), r, k, 0, change, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Resize.State != engine.ResizeInProgress || rec.Applied.NanoCPUs != 5e8 {
		t.Fatalf("the answer: %+v, applied %+v", rec.Resize, rec.Applied)
	}
	for deadline := time.Now().Add(5 * time.Second); k.awaited.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the resize was not followed")
		}
	}
	close(k.settle)
	var v RunView
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		v = r.View()
		if v.Changes[0].Resize.State == engine.ResizeDone || time.Now().After(deadline) {
			break
		}
	}
	c := v.Changes[0]
	if c.Resize.State != engine.ResizeDone || c.Resize.SettledAt <= 0 || c.Applied.NanoCPUs != 15e8 || c.Resize.Applied.Limits.CPU != "1500m" {
		t.Fatalf("the change once kubelet applied it: %+v, applied %+v", c.Resize, c.Applied)
	}
	if got := v.Lanes[0].ChartLimits.CPU; got != 1.5 {
		t.Errorf("the lane's CPU limit after the resize: %v, want 1.5", got)
	}

	// The run ends before kubelet settles a second resize: the follower
	// ends with it, and the record keeps kubelet's last word.
	r2 := podRun(t)
	k2 := &slowKubelet{settle: make(chan struct{})}
	if _, err := resize(context.Background(), r2, k2, 0, change, nil); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); k2.awaited.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the resize was not followed")
		}
	}
	close(r2.done)
	for deadline := time.Now().Add(5 * time.Second); k2.gaveUp.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the resize was still followed after the run ended")
		}
	}
	if c := r2.View().Changes[0]; c.Resize.State != engine.ResizeInProgress || c.Resize.SettledAt != 0 {
		t.Errorf("a resize the run ended on: %+v", c.Resize)
	}
}
