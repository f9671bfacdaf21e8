package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/workload/wire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// Pods is the pod backend, the runner's Backend on a node: a lane is a
// pod, made when its lane starts, followed until its container ends, read
// through its cgroup files, and deleted with its run. The node comes from
// the engine's lease, which a run's first lane takes.
type Pods struct {
	c     *client
	lease *nodeLease
	// files opens a started pod's container's cgroup files: here, or
	// through the node's sampler (remote).
	files podFiles

	mu        sync.Mutex
	pending   map[string]engine.NewLane // created, not yet started: a pod starts when it is made
	started   map[string]podRef         // started pods, by name
	exclusive map[string]bool           // started pods with CPUs of their own (the static CPU manager)
}

// podRef is a started pod: its uid and its container's id.
type podRef struct{ uid, cid string }

func newPods(c *client, lease *nodeLease, files podFiles) *Pods {
	return &Pods{c: c, lease: lease, files: files,
		pending: map[string]engine.NewLane{}, started: map[string]podRef{}, exclusive: map[string]bool{}}
}

// Create readies lane's pod. A pod starts as soon as it is made, so it is
// made by Start, in the run's order and phases; Create checks the lane can
// be a pod, takes the node for the run, and reports what the pod will be.
func (p *Pods) Create(ctx context.Context, nl engine.NewLane) (engine.Created, error) {
	if nl.Lane.Pod == nil {
		return engine.Created{}, fmt.Errorf("kube: lane %d has no pod resources (validated for another engine)", nl.Index)
	}
	node := p.lease.Node()
	if node == "" {
		return engine.Created{}, errors.New("kube: no node probed")
	}
	if err := p.lease.ensure(ctx, nl.RunID, slog.Default()); err != nil {
		return engine.Created{}, err
	}
	// The pod as a person would apply it: it starts its work at once,
	// without the start barrier's file, which only this server writes.
	shown := nl
	shown.Begin = false
	pod := PodSpec(shown, p.c.placement(node), args(shown, wire.Loopback))
	p.mu.Lock()
	p.pending[pod.Name] = nl
	p.mu.Unlock()
	return engine.Created{ID: pod.Name, Applied: nl.Lane.Pod.Resources(), Manifest: YAML(pod)}, nil
}

// Start makes the lane's pod and waits until its container runs; it returns
// the workload's pid on the node.
func (p *Pods) Start(ctx context.Context, id string) (int, error) {
	p.mu.Lock()
	nl, ok := p.pending[id]
	delete(p.pending, id)
	p.mu.Unlock()
	if !ok {
		return 0, fmt.Errorf("kube: no lane %s to start", id)
	}
	if r := nl.Lane.Pod; r.ExclusiveCPUs == 0 && r.SharedCPUs == 0 {
		if err := p.waitExclusiveGone(ctx); err != nil {
			return 0, err
		}
	}
	service := wire.Loopback
	if nl.Lane.Target >= 0 {
		// A load lane reaches its service at the service pod's address.
		ip, err := p.c.podIP(ctx, nl.TargetID)
		if err != nil {
			return 0, err
		}
		service = ip
	}
	uid, cid, err := p.c.makePod(ctx, PodSpec(nl, p.c.placement(p.lease.Node()), args(nl, service)))
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	p.started[id] = podRef{uid, cid}
	if nl.Lane.Pod.ExclusiveCPUs > 0 {
		p.exclusive[id] = true
	}
	p.mu.Unlock()
	return engine.PodPid(p.c.cfg.CgroupRoot, uid, cid), nil
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

// waitExclusiveGone waits until the pods started with CPUs of their own
// are gone. kubelet gives their CPUs back to the shared pool when they
// stop; a pod of the pool made before then would start on fewer CPUs than
// the plan gives it (and Go would count those).
func (p *Pods) waitExclusiveGone(ctx context.Context) error {
	p.mu.Lock()
	ids := make([]string, 0, len(p.exclusive))
	for id := range p.exclusive {
		ids = append(ids, id)
	}
	p.mu.Unlock()
	for _, id := range ids {
		if err := p.c.waitGone(ctx, id); err != nil {
			return fmt.Errorf("kube: a pod with CPUs of its own is still there: %w", err)
		}
		p.mu.Lock()
		delete(p.exclusive, id)
		p.mu.Unlock()
	}
	return nil
}

// Wait follows the lane's pod until its container has ended, and reports
// how: exit code, kubelet's reason ("OOMKilled") and times.
func (p *Pods) Wait(ctx context.Context, id string) <-chan engine.Exit {
	out := make(chan engine.Exit, 1)
	// Lives until the pod's container ends, the pod goes, or ctx ends.
	go func() { out <- p.follow(ctx, id) }()
	return out
}

func (p *Pods) follow(ctx context.Context, id string) engine.Exit {
	var last *corev1.Pod
	for ctx.Err() == nil {
		w, err := p.c.streams.CoreV1().Pods(p.c.cfg.Namespace).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", id).String()})
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			last = pod
			if e, over := ended(pod); over {
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

// Signal asks a lane to stop: its pod is deleted, with a grace period for
// SigTerm (kubelet sends SIGTERM, then SIGKILL) and the least there is for
// SigKill. A grace period of 0 would remove the pod from the API at once,
// before kubelet had stopped its container or said how it ended: the
// lane's Wait would see the pod gone without an exit (a lane killed at the
// run's duration would fail its run).
func (p *Pods) Signal(id string, sig engine.StopSignal, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	grace := int64(gracePeriod)
	if sig == engine.SigKill {
		grace = 1
	}
	if err := p.c.cs.CoreV1().Pods(p.c.cfg.Namespace).Delete(ctx, id, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil && !notFound(err) {
		log.Debug("signal pod", slog.String("pod", id), slog.String("signal", string(sig)), slog.Any("err", err))
	}
}

// Remove deletes a run's pods, by its label, waits until they are gone,
// and gives the node back.
func (p *Pods) Remove(ctx context.Context, runID string, ids []string, _ []specs.PlannedLane, log *slog.Logger) {
	p.mu.Lock()
	for _, id := range ids {
		delete(p.pending, id)
		delete(p.started, id)
		delete(p.exclusive, id)
	}
	p.mu.Unlock()
	if _, err := p.c.reap(ctx, engine.LabelRun, runID, p.lease.Node()); err != nil {
		log.Warn("remove pods", slog.String("run", runID), slog.Any("err", err))
	}
	// The node is free for another run once the pods are gone.
	if err := p.lease.release(ctx, runID); err != nil {
		log.Warn("release node", slog.String("run", runID), slog.Any("err", err))
	}
}

// OpenReader reads the pod's container's cgroup files on the node: here,
// or through the node's sampler.
func (p *Pods) OpenReader(ctx context.Context, _ engine.HostInfo, id string, _ int, log *slog.Logger) (engine.Reader, time.Duration, string) {
	p.mu.Lock()
	ref, ok := p.started[id]
	p.mu.Unlock()
	if !ok {
		return noReader{fmt.Errorf("kube: pod %s has not started", id)}, time.Second, engine.StatsCgroup
	}
	// A node's sampler that is slow to answer (a node under load, or
	// emulated) is asked again: a lane without its cgroup files has no
	// chart and no kernel view.
	var cg engine.CgroupFiles
	var remote bool
	var err error
	for try := 1; ; try++ {
		cg, remote, err = p.files(ctx, ref.uid, ref.cid)
		if err == nil || try == openTries || ctx.Err() != nil {
			break
		}
		log.Warn("pod cgroup files: trying again", slog.String("pod", id), slog.Int("try", try), slog.Any("err", err))
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	source := engine.StatsCgroup
	if remote {
		source = engine.StatsSampler
	}
	if err != nil {
		log.Warn("pod cgroup files not found", slog.String("pod", id), slog.Any("err", err))
		return noReader{fmt.Errorf("kube: no cgroup files of pod %s: %w", id, err)}, time.Second, source
	}
	return cg, 0, source
}

// openTries is how often a lane's cgroup files are asked for.
const openTries = 3

type noReader struct{ err error }

func (n noReader) Read() (engine.Counters, error) { return engine.Counters{}, n.err }

// Alive says whether the API server answers and the node is still Ready
// (a node is all the server may read beyond its namespace).
func (p *Pods) Alive(ctx context.Context) error {
	name := p.lease.Node()
	if name == "" {
		return errors.New("kube: no node probed")
	}
	n, err := p.c.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if !nodeReady(*n) {
		return fmt.Errorf("kube: node %s is not Ready", name)
	}
	return nil
}
