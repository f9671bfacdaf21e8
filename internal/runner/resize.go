package runner

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// Resizer is a backend whose lanes change their resources in place while
// they run: a pod's resize (kube.Pods). Resize asks for to, waits for
// kubelet's word on it, and reports it.
type Resizer interface {
	Resize(ctx context.Context, id string, to specs.Pod) (engine.Resized, error)
	// AwaitResize follows a resize Resize left in progress or deferred
	// until kubelet settles it or ctx ends.
	AwaitResize(ctx context.Context, id string, to specs.Pod) (engine.Resized, error)
}

// resize is r.UpdateLimits for a pod lane: the change, in Docker flags that
// translate exactly or in Kubernetes' words, is checked as the API server
// and kubelet check a resize (specs.ResolveResize), admitted, and
// made through the pod's resize subresource. Done, it is the lane's new
// limits, read back from the pod's status and its cgroup files; deferred or
// still in progress, it is recorded with kubelet's message and the lane
// keeps the limits it has; infeasible or failed, it is refused with
// kubelet's reason and the pod's spec is put back.
func resize(ctx context.Context, r *Run, rz Resizer, lane int, change specs.Limits, admit func(after []specs.Resources) error) (ChangeRecord, error) {
	refuse := func(format string, args ...any) (ChangeRecord, error) {
		return ChangeRecord{}, specs.Errors{{Lane: lane, Field: "resources", Message: fmt.Sprintf(format, args...)}}
	}
	r.mu.Lock()
	_, current, err := r.st.laneLimits(r.plan, lane)
	var pod *specs.Pod
	var id string
	if err == nil {
		pod, id = r.st.lanes[lane].pod, r.st.lanes[lane].id
	}
	r.mu.Unlock()
	if err != nil {
		return ChangeRecord{}, err
	}
	if pod == nil {
		return refuse("the lane is not a pod")
	}
	next, errs := specs.ResolveResize(*pod, change, r.env.Experiments())
	if errs != nil {
		for i := range errs {
			errs[i].Lane = lane
		}
		return ChangeRecord{}, errs
	}
	next.Cpuset = pod.Cpuset
	if admit != nil {
		r.mu.Lock()
		after := r.st.resources(r.plan)
		r.mu.Unlock()
		after[lane] = next.Resources()
		if err := admit(after); err != nil {
			return ChangeRecord{}, err
		}
	}
	res, err := rz.Resize(ctx, id, next)
	if err != nil {
		return refuse("kubernetes: %v", err)
	}
	if res.State == engine.ResizeInfeasible || res.State == engine.ResizeError {
		// Put the spec back, so that the pod is what runs.
		if back, err := rz.Resize(context.WithoutCancel(ctx), id, *pod); err != nil || back.State != engine.ResizeDone {
			r.env.log().Warn("put a refused resize back", slog.Int("lane", lane), slog.String("state", back.State), slog.Any("err", err))
		}
		return refuse("kubelet refused the resize (%s): %s", res.State, res.Message)
	}
	applied, now := current, *pod
	if res.State == engine.ResizeDone {
		now = res.Applied
		now.QoS, now.Cpuset = next.QoS, next.Cpuset
		applied = now.Resources()
	}
	rec := ChangeRecord{Lane: lane, Limits: change, Applied: applied, Resize: &ResizeRecord{
		Requested: next.Requested(), Command: res.Command, State: res.State, Message: res.Message,
		Restarts: res.Restarts, Applied: now.Requested(), QoS: now.QoS,
	}}
	if res.State != engine.ResizeDone {
		// kubelet has not settled it: the run follows it to the end.
		rec = r.changed(rec, nil, nil)
		go followResize(r, rz, rec, id, *pod, next)
		return rec, nil
	}
	return r.changed(rec, &applied, &now), nil
}
