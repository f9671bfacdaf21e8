package kube

import (
	"context"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// resizeTimeout is how long Resize waits for kubelet to say what became of
// a resize: it acts on it at its next pod sync, within a second or two.
const resizeTimeout = 30 * time.Second

// resizePolicy is every lane's: CPU and memory change without a restart,
// as a live change of a Docker lane does.
var resizePolicy = []corev1.ContainerResizePolicy{
	{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
	{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.NotRequired},
}

// Resize changes a running lane's pod's CPU and memory requests and limits
// in place, through the pod's resize subresource, to those of to (checked
// by specs.ResolveResize), and waits until kubelet has applied them,
// deferred them, found them infeasible, or resizeTimeout has passed.
func (p *Pods) Resize(ctx context.Context, id string, to specs.Pod) (engine.Resized, error) {
	patch := specs.ResizePatch(Container, to)
	out := engine.Resized{Command: specs.ResizeCommand(id, Container, to)}
	pods := p.c.cs.CoreV1().Pods(p.c.cfg.Namespace)
	if _, err := pods.Patch(ctx, id, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: "limitlab"}, "resize"); err != nil {
		return out, err
	}
	err := p.awaitResize(ctx, id, to, resizeTimeout, false, &out)
	if err != nil && out.State == engine.ResizeInProgress {
		// Still in progress: the record says so, with kubelet's words.
		return out, nil
	}
	return out, err
}

// AwaitResize follows a resize that Resize left in progress or deferred
// until kubelet has applied it, found it infeasible or failed at it, or
// ctx ends (the lane's end): kubelet retries a deferred resize and may
// finish one in progress long after the first wait.
func (p *Pods) AwaitResize(ctx context.Context, id string, to specs.Pod) (engine.Resized, error) {
	out := engine.Resized{Command: specs.ResizeCommand(id, Container, to)}
	err := p.awaitResize(ctx, id, to, 24*time.Hour, true, &out)
	return out, err
}

// awaitResize polls the pod until kubelet's word on the resize to to is
// no longer in progress (nor deferred, with pastDeferral), or timeout,
// filling out.
func (p *Pods) awaitResize(ctx context.Context, id string, to specs.Pod, timeout time.Duration, pastDeferral bool, out *engine.Resized) error {
	pods := p.c.cs.CoreV1().Pods(p.c.cfg.Namespace)
	return poll(ctx, "pod "+id+" resized", timeout, func(ctx context.Context) (bool, error) {
		pod, err := pods.Get(ctx, id, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		out.State, out.Message = resizeState(pod, to)
		if st := status(pod); st != nil {
			out.Restarts = st.RestartCount
			out.Applied = actual(st)
		}
		return out.State != engine.ResizeInProgress && !(pastDeferral && out.State == engine.ResizeDeferred), nil
	})
}

// resizeState is kubelet's word on a resize to want: a pending or in
// progress condition's, else done once the container's resources read
// back as asked.
func resizeState(pod *corev1.Pod, want specs.Pod) (state, message string) {
	for _, c := range pod.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case corev1.PodResizePending:
			return c.Reason, c.Message // Deferred or Infeasible
		case corev1.PodResizeInProgress:
			if c.Reason == corev1.PodReasonError {
				return engine.ResizeError, c.Message
			}
			return engine.ResizeInProgress, c.Message
		}
	}
	st := status(pod)
	if st == nil {
		return engine.ResizeInProgress, "no container status yet"
	}
	got := actual(st)
	if got.RequestMilliCPU == want.RequestMilliCPU && got.LimitMilliCPU == want.LimitMilliCPU &&
		got.RequestMemory == want.RequestMemory && got.LimitMemory == want.LimitMemory {
		return engine.ResizeDone, ""
	}
	return engine.ResizeInProgress, "the container's resources do not yet read back as asked"
}

// actual is the container's CPU and memory as its status reports them
// applied.
func actual(st *corev1.ContainerStatus) specs.Pod {
	var p specs.Pod
	if st.Resources == nil {
		return p
	}
	r := st.Resources
	if q, ok := r.Requests[corev1.ResourceCPU]; ok {
		p.RequestMilliCPU = q.MilliValue()
	}
	if q, ok := r.Limits[corev1.ResourceCPU]; ok {
		p.LimitMilliCPU = q.MilliValue()
	}
	if q, ok := r.Requests[corev1.ResourceMemory]; ok {
		p.RequestMemory = q.Value()
	}
	if q, ok := r.Limits[corev1.ResourceMemory]; ok {
		p.LimitMemory = q.Value()
	}
	return p
}
