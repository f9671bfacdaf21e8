package kube

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/workload/wire"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

func notFound(err error) bool { return apierrors.IsNotFound(err) }

// Create readies lane's pod. A pod starts as soon as it is made, so it is
// made by Start, in the run's order and phases; Create checks the lane can
// be a pod and reports what it will be.
func (c *Cluster) Create(ctx context.Context, nl engine.NewLane) (engine.Created, error) {
	if nl.Lane.Pod == nil {
		return engine.Created{}, fmt.Errorf("kube: lane %d has no pod resources (validated for another engine)", nl.Index)
	}
	node := c.Node()
	if node == "" {
		return engine.Created{}, fmt.Errorf("kube: no node probed")
	}
	// The run takes the node for its time.
	if err := c.ensureTaken(ctx, nl.RunID, slog.Default()); err != nil {
		return engine.Created{}, err
	}
	p := PodSpec(nl, node, args(nl, wire.Loopback))
	c.mu.Lock()
	c.pending[p.Name] = nl
	c.mu.Unlock()
	return engine.Created{ID: p.Name, Applied: nl.Lane.Pod.Resources(), Manifest: YAML(p)}, nil
}

// Start makes the lane's pod and waits until its container runs; it returns
// the workload's pid on the node.
func (c *Cluster) Start(ctx context.Context, id string) (int, error) {
	c.mu.Lock()
	nl, ok := c.pending[id]
	delete(c.pending, id)
	node := c.node
	c.mu.Unlock()
	if !ok {
		return 0, fmt.Errorf("kube: no lane %s to start", id)
	}
	if p := nl.Lane.Pod; p.ExclusiveCPUs == 0 && p.SharedCPUs == 0 {
		if err := c.waitExclusiveGone(ctx); err != nil {
			return 0, err
		}
	}
	service := wire.Loopback
	if nl.Lane.Target >= 0 {
		// A load lane reaches its service at the service pod's address.
		ip, err := c.podIP(ctx, nl.TargetID)
		if err != nil {
			return 0, err
		}
		service = ip
	}
	uid, cid, err := c.makePod(ctx, PodSpec(nl, node, args(nl, service)))
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.started[id], c.uids[id] = cid, uid
	if nl.Lane.Pod.ExclusiveCPUs > 0 {
		c.exclusive[id] = true
	}
	c.mu.Unlock()
	return engine.PodPid(c.cgroupRoot, uid, cid), nil
}

// makePod makes a pod and waits until its container has run: it returns
// the pod's uid and the container's id, or why the pod never ran.
func (c *Cluster) makePod(ctx context.Context, p *corev1.Pod) (uid, cid string, err error) {
	id := p.Name
	if _, err := c.cs.CoreV1().Pods(c.ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		return "", "", fmt.Errorf("kube: create pod: %w", err)
	}
	for {
		got, err := c.cs.CoreV1().Pods(c.ns).Get(ctx, id, metav1.GetOptions{})
		if err != nil {
			return "", "", fmt.Errorf("kube: pod %s: %w", id, err)
		}
		if st := status(got); st != nil {
			switch {
			case st.State.Running != nil || st.State.Terminated != nil:
				return string(got.UID), containerID(st.ContainerID), nil
			case st.State.Waiting != nil && st.State.Waiting.Reason != "ContainerCreating" && st.State.Waiting.Reason != "PodInitializing":
				return "", "", fmt.Errorf("kube: pod %s is waiting: %s: %s", id, st.State.Waiting.Reason, st.State.Waiting.Message)
			}
		}
		if got.Status.Phase == corev1.PodFailed {
			return "", "", fmt.Errorf("kube: pod %s failed: %s %s", id, got.Status.Reason, got.Status.Message)
		}
		select {
		case <-ctx.Done():
			return "", "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// args is a lane's workload command line, a load's with its service at
// the address service, and with the start barrier's file where the lane
// waits for it.
func args(nl engine.NewLane, service string) []string {
	a := nl.Lane.Workload.ArgsAt(service)
	if nl.Begin {
		a = append(a, "-begin-file", wire.BeginPath)
	}
	return a
}

func (c *Cluster) podIP(ctx context.Context, name string) (string, error) {
	p, err := c.cs.CoreV1().Pods(c.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("kube: the service pod: %w", err)
	}
	if net.ParseIP(p.Status.PodIP) == nil {
		return "", fmt.Errorf("kube: the service pod %s has no address", name)
	}
	return p.Status.PodIP, nil
}

func status(p *corev1.Pod) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == Container {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// Wait follows the lane's pod until its container has ended, and reports
// how: exit code, kubelet's reason ("OOMKilled") and times.
func (c *Cluster) Wait(ctx context.Context, id string) <-chan engine.Exit {
	out := make(chan engine.Exit, 1)
	// Lives until the pod's container ends, the pod goes, or ctx ends.
	go func() { out <- c.follow(ctx, id) }()
	return out
}

func (c *Cluster) follow(ctx context.Context, id string) engine.Exit {
	var last *corev1.Pod
	for ctx.Err() == nil {
		w, err := c.cs.CoreV1().Pods(c.ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", id).String()})
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			last = p
			if e, over := ended(p); over {
				w.Stop()
				return e
			}
			if ev.Type == watch.Deleted {
				w.Stop()
				return engine.Exit{Err: fmt.Errorf("pod %s was deleted before its container ended", id)}
			}
		}
		w.Stop()
	}
	if last != nil {
		if e, over := ended(last); over {
			return e
		}
	}
	return engine.Exit{Err: ctx.Err()}
}

func ended(p *corev1.Pod) (engine.Exit, bool) {
	st := status(p)
	if st == nil || st.State.Terminated == nil {
		return engine.Exit{}, false
	}
	t := st.State.Terminated
	return engine.Exit{Code: int(t.ExitCode), HasCode: true, OOMKilled: t.Reason == "OOMKilled", Reason: t.Reason,
		StartedAt: t.StartedAt.Time, FinishedAt: t.FinishedAt.Time}, true
}

// Logs copies the container's output: kubelet keeps one stream, so the
// workload's JSON lines go to stdout and anything else to stderr.
func (c *Cluster) Logs(ctx context.Context, id string, stdout, stderr io.Writer) error {
	rc, err := c.cs.CoreV1().Pods(c.ns).GetLogs(id, &corev1.PodLogOptions{Container: Container, Follow: true}).Stream(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		w := stderr
		if json.Valid(line) && bytes.HasPrefix(bytes.TrimSpace(line), []byte("{")) {
			w = stdout
		}
		// A copy: the scanner's buffer holds the lines still to come.
		if _, err := w.Write(append(slices.Clip(line), '\n')); err != nil {
			return err
		}
	}
	return sc.Err()
}

// Signal asks a lane to stop: its pod is deleted, with a grace period for
// SigTerm (kubelet sends SIGTERM, then SIGKILL) and none for SigKill.
func (c *Cluster) Signal(id string, sig engine.StopSignal, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	grace := int64(gracePeriod)
	if sig == engine.SigKill {
		grace = 0
	}
	if err := c.cs.CoreV1().Pods(c.ns).Delete(ctx, id, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil && !notFound(err) {
		log.Debug("signal pod", slog.String("pod", id), slog.String("signal", string(sig)), slog.Any("err", err))
	}
}

// Remove deletes a run's pods, by its label, and waits until they are gone.
func (c *Cluster) Remove(ctx context.Context, runID string, ids []string, _ []experiments.PlannedLane, log *slog.Logger) {
	c.mu.Lock()
	for _, id := range ids {
		delete(c.pending, id)
		delete(c.started, id)
		delete(c.uids, id)
		delete(c.exclusive, id)
	}
	c.mu.Unlock()
	if _, err := c.Reap(ctx, engine.LabelRun, runID); err != nil {
		log.Warn("remove pods", slog.String("run", runID), slog.Any("err", err))
	}
	// The node is free for another run once the pods are gone.
	if err := c.release(ctx, runID); err != nil {
		log.Warn("release node", slog.String("run", runID), slog.Any("err", err))
	}
}

// OpenReader reads the pod's container's cgroup files on the node: here,
// or through the node's sampler.
func (c *Cluster) OpenReader(ctx context.Context, _ engine.HostInfo, id string, _ int, log *slog.Logger) (engine.Reader, time.Duration, string) {
	c.mu.Lock()
	cid, uid, remote := c.started[id], c.uids[id], c.smp != nil
	c.mu.Unlock()
	source := engine.StatsCgroup
	if remote {
		source = engine.StatsSampler
	}
	if cid == "" {
		return noReader{fmt.Errorf("kube: pod %s has not started", id)}, time.Second, source
	}
	cg, err := c.openPod(ctx, uid, cid)
	if err != nil {
		log.Warn("pod cgroup files not found", slog.String("pod", id), slog.Any("err", err))
		return noReader{fmt.Errorf("kube: no cgroup files of pod %s: %w", id, err)}, time.Second, source
	}
	return cg, 0, source
}

type noReader struct{ err error }

func (n noReader) Read() (engine.Counters, error) { return engine.Counters{}, n.err }
