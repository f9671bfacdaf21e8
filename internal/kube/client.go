package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// client is the server's access to a cluster: its API, and the
// configuration every part of the package reads.
type client struct {
	cs kubernetes.Interface
	// streams is cs without the client's timeout, for what follows on for
	// as long as a lane runs: its log, the watch of its pod.
	streams kubernetes.Interface
	server  string
	cfg     Config
}

// How long the API calls that wait for kubelet may take: a pod to run,
// pods to go.
const (
	podStartTimeout = 5 * time.Minute
	podGoneTimeout  = time.Minute
)

// poll calls done, every 50 ms at first and then half as long again each
// time up to a second, until it says it is done, fails, or timeout
// passes: then it says what did not happen in time. It is the package's
// one way to wait for the cluster. (apimachinery's exponential backoff
// stops at its cap rather than staying there.)
func poll(ctx context.Context, what string, timeout time.Duration, done func(context.Context) (bool, error)) error {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	delay := 50 * time.Millisecond
	for {
		ok, err := done(tctx)
		switch {
		case ok:
			return nil
		case err != nil && tctx.Err() == nil:
			return err
		}
		select {
		case <-tctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("kube: %s: not within %s", what, timeout)
		case <-time.After(delay):
		}
		delay = min(delay*3/2, time.Second)
	}
}

func notFound(err error) bool { return apierrors.IsNotFound(err) }

// pods lists the pods of the namespace with the label selector; with node
// named, only that node's.
func (c *client) pods(ctx context.Context, sel, node string) ([]corev1.Pod, error) {
	opts := metav1.ListOptions{LabelSelector: sel}
	if node != "" {
		opts.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", node).String()
	}
	list, err := c.cs.CoreV1().Pods(c.cfg.Namespace).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := list.Items[:0]
	for _, p := range list.Items {
		if node == "" || p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out, nil
}

// reap removes the pods labelled label=value (on node, if named), and
// waits until kubelet has stopped them: their cgroups and processes are
// gone then, and the node is free for another run.
func (c *client) reap(ctx context.Context, label, value, node string) (int, error) {
	sel := label + "=" + value
	list, err := c.pods(ctx, sel, node)
	if err != nil {
		return 0, fmt.Errorf("kube: list pods %s: %w", sel, err)
	}
	zero := int64(0)
	n := 0
	var errs []error
	for _, p := range list {
		if err := c.cs.CoreV1().Pods(c.cfg.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !notFound(err) {
			errs = append(errs, err)
			continue
		}
		n++
	}
	if n > 0 {
		errs = append(errs, poll(ctx, "pods "+sel+" to go", podGoneTimeout, func(ctx context.Context) (bool, error) {
			left, err := c.pods(ctx, sel, node)
			return err == nil && len(left) == 0, nil
		}))
	}
	return n, errors.Join(errs...)
}

// makePod makes a pod and waits until its container has run: it returns
// the pod's uid and the container's id, or why the pod never ran.
func (c *client) makePod(ctx context.Context, p *corev1.Pod) (uid, cid string, err error) {
	id := p.Name
	if _, err := c.cs.CoreV1().Pods(c.cfg.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		return "", "", fmt.Errorf("kube: create pod: %w", err)
	}
	err = poll(ctx, "pod "+id+" to run", podStartTimeout, func(ctx context.Context) (bool, error) {
		got, err := c.cs.CoreV1().Pods(c.cfg.Namespace).Get(ctx, id, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("kube: pod %s: %w", id, err)
		}
		if st := status(got); st != nil {
			switch {
			case st.State.Running != nil || st.State.Terminated != nil:
				uid, cid = string(got.UID), containerID(st.ContainerID)
				return true, nil
			case st.State.Waiting != nil && st.State.Waiting.Reason != "ContainerCreating" && st.State.Waiting.Reason != "PodInitializing":
				return false, fmt.Errorf("kube: pod %s is waiting: %s: %s", id, st.State.Waiting.Reason, st.State.Waiting.Message)
			}
		}
		if got.Status.Phase == corev1.PodFailed {
			return false, fmt.Errorf("kube: pod %s failed: %s %s", id, got.Status.Reason, got.Status.Message)
		}
		return false, nil
	})
	return uid, cid, err
}

// waitGone waits until the pod is gone.
func (c *client) waitGone(ctx context.Context, name string) error {
	return poll(ctx, "pod "+name+" to go", podGoneTimeout, func(ctx context.Context) (bool, error) {
		_, err := c.cs.CoreV1().Pods(c.cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
		return notFound(err), nil
	})
}

// podIP is a running pod's address.
func (c *client) podIP(ctx context.Context, name string) (string, error) {
	p, err := c.cs.CoreV1().Pods(c.cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("kube: the service pod: %w", err)
	}
	if net.ParseIP(p.Status.PodIP) == nil {
		return "", fmt.Errorf("kube: the service pod %s has no address", name)
	}
	return p.Status.PodIP, nil
}

// status is the status of a lane pod's one container.
func status(p *corev1.Pod) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == Container {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// containerID is a status's container id without its runtime's scheme.
func containerID(s string) string {
	if i := strings.Index(s, "://"); i >= 0 {
		return s[i+3:]
	}
	return s
}

func nodeReady(n corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// placement is where a lane's pod goes on node.
func (c *client) placement(node string) Placement {
	return Placement{Node: node, Tolerate: c.cfg.Tolerate}
}
