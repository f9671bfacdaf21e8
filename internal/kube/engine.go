package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/limitlab/limitlab/internal/engine"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Engine is one node of a cluster as an engine of the pool (the
// workshop's Driver): the pod backend its runs use, the lease that holds
// its node for one run at a time, the sampler that reads its pods where
// the server cannot, and its CPU manager policy. Its probe chooses the
// node: the one it was made for, or the first Ready one.
type Engine struct {
	*Pods
	c       *client
	pinned  string // the node it was made for; "" for the first Ready one
	sampler *samplerLocator
	cpu     cpuManagers
}

func newEngine(c *client, node string) *Engine {
	l := &nodeLease{c: c, node: node}
	s := &samplerLocator{c: c}
	return &Engine{Pods: newPods(c, l, s.files), c: c, pinned: node, sampler: s} // its lease is its Pods'
}

// Server is the API server's address.
func (e *Engine) Server() string { return e.c.server }

// Node is the node runs take ("" before a probe).
func (e *Engine) Node() string { return e.lease.Node() }

// Probe finds the node for runs and describes it as a host: its
// allocatable CPUs and memory (what pods may have), its kubelet and
// kernel, which Docker flags a pod has words for, where its cgroup files
// are read, and its CPU manager policy.
func (e *Engine) Probe(ctx context.Context) (engine.HostInfo, error) {
	ver, err := e.c.cs.Discovery().ServerVersion()
	if err != nil {
		return engine.HostInfo{}, fmt.Errorf("kube: the API server does not answer: %w", err)
	}
	n, err := e.pickNode(ctx)
	if err != nil {
		return engine.HostInfo{}, err
	}
	kn := engine.KubernetesNode{
		Name: n.Name, ServerVersion: ver.GitVersion, KubeletVersion: n.Status.NodeInfo.KubeletVersion,
		Kernel: n.Status.NodeInfo.KernelVersion, OS: n.Status.NodeInfo.OSImage,
		Runtime: n.Status.NodeInfo.ContainerRuntimeVersion,
	}
	if q, ok := n.Status.Allocatable[corev1.ResourceCPU]; ok {
		kn.NCPU = int(q.Value()) // whole CPUs: what a lane's limit may reach
	}
	if q, ok := n.Status.Allocatable[corev1.ResourceMemory]; ok {
		kn.MemTotal = q.Value()
	}
	kn.CgroupRoot, kn.Cgroup, kn.Local = localCgroups(e.c.cfg.CgroupRoot)
	here := thisMachine(n)
	switch {
	case e.c.cfg.ViaSampler || !here || !kn.Local:
		// Another machine's node (kubelet's boot id is not this one's),
		// or this machine's seen from a pod of its own, whose cgroup
		// namespace hides the node's pods: the node's sampler reads the
		// pods' cgroup files.
		smp, err := e.sampler.locate(ctx, n.Name)
		if err != nil {
			where := "is to be read through its sampler"
			switch {
			case !here:
				where = "is not the machine the server runs on"
			case !kn.Local:
				where = fmt.Sprintf("shows no pod cgroups (kubepods) under %s", e.c.cfg.CgroupRoot)
			}
			return engine.HostInfo{}, fmt.Errorf("kube: node %s %s, and its sampler does not answer: %w", n.Name, where, err)
		}
		kn.Local, kn.Sampler, kn.Cgroup = false, smp.Address(), engine.ParseCgroupVersion(smp.CgroupVersion())
	default:
		e.sampler.readHere()
	}
	e.lease.use(n.Name)
	kn.CPUManager, kn.CPUManagerNote = e.cpu.policy(ctx, e.c, n, kn.NCPU, e.sampler.files)
	return engine.KubernetesHost(kn), nil
}

// pickNode is the node runs take: the pinned one, which must be Ready and
// not cordoned, or else the first Ready one by name. A node another
// server's live run holds is refused; a dead server's mark is cleared.
func (e *Engine) pickNode(ctx context.Context) (corev1.Node, error) {
	if e.pinned != "" {
		n, err := e.c.cs.CoreV1().Nodes().Get(ctx, e.pinned, metav1.GetOptions{})
		switch {
		case err != nil:
			return corev1.Node{}, fmt.Errorf("kube: node %s: %w", e.pinned, err)
		case n.Spec.Unschedulable:
			return corev1.Node{}, fmt.Errorf("kube: node %s is cordoned", e.pinned)
		case !nodeReady(*n):
			return corev1.Node{}, fmt.Errorf("kube: node %s is not Ready", e.pinned)
		}
		if foreign := ForeignTaints(*n, e.c.cfg.Tolerate); len(foreign) > 0 {
			return corev1.Node{}, fmt.Errorf("kube: node %s is tainted %s by someone else: lanes go there only if the server is started with -kube-tolerate %s",
				e.pinned, strings.Join(foreign, ", "), taintKeys(foreign))
		}
		if err := clearStale(ctx, e.c, *n); err != nil {
			return corev1.Node{}, err
		}
		return *n, nil
	}
	nodes, err := e.c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return corev1.Node{}, fmt.Errorf("kube: list nodes: %w", err)
	}
	var ready []corev1.Node
	var held error
	for _, n := range nodes.Items {
		if !nodeReady(n) || n.Spec.Unschedulable || len(ForeignTaints(n, e.c.cfg.Tolerate)) > 0 {
			continue
		}
		if err := clearStale(ctx, e.c, n); err != nil {
			held = err
			continue
		}
		ready = append(ready, n)
	}
	if len(ready) == 0 {
		if held != nil {
			return corev1.Node{}, held
		}
		return corev1.Node{}, fmt.Errorf("kube: no Ready, schedulable node among %d", len(nodes.Items))
	}
	sort.Slice(ready, func(i, j int) bool { return ready[i].Name < ready[j].Name })
	return ready[0], nil
}

// localCgroups says whether kubelet's pod cgroups are visible under the
// cgroup root, and the hierarchy's version.
func localCgroups(root string) (string, engine.CgroupVersion, bool) {
	if fileExists(filepath.Join(root, "cgroup.controllers")) {
		return root, engine.CgroupV2, fileExists(filepath.Join(root, "kubepods")) || fileExists(filepath.Join(root, "kubepods.slice"))
	}
	return root, engine.CgroupV1, fileExists(filepath.Join(root, "cpu", "kubepods")) || fileExists(filepath.Join(root, "cpu", "kubepods.slice"))
}

// bootID is this machine's, which kubelet reports as its node's.
var bootID = func() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return string(bytes.TrimSpace(b))
}()

// thisMachine says whether the node is the machine the server runs on:
// its pods' cgroup files are then the ones seen here.
func thisMachine(n corev1.Node) bool {
	return bootID != "" && n.Status.NodeInfo.BootID == bootID
}

// HasImage says whether the node runs take has the image: kubelet lists
// the images it holds in the node's status.
func (e *Engine) HasImage(ctx context.Context, ref string) (bool, error) {
	n, err := e.c.cs.CoreV1().Nodes().Get(ctx, e.Node(), metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("kube: node %s: %w", e.Node(), err)
	}
	for _, im := range n.Status.Images {
		for _, name := range im.Names {
			if name == ref || name == "docker.io/"+ref {
				return true, nil
			}
		}
	}
	return false, nil
}

// Reap removes the pods labelled label=value on the engine's node (every
// node's, for an engine of the first Ready one).
func (e *Engine) Reap(ctx context.Context, label, value string) (int, error) {
	return e.c.reap(ctx, label, value, e.pinned)
}

// ReapRun removes what is left of a run's pods, and gives its node back.
func (e *Engine) ReapRun(ctx context.Context, runID string, _ *slog.Logger) error {
	_, err := e.Reap(ctx, engine.LabelRun, runID)
	return errors.Join(err, e.lease.release(ctx, runID))
}

// ReapInstance removes every pod a server instance made, and a node this
// server took and did not give back (it died).
func (e *Engine) ReapInstance(ctx context.Context, instance string, _ *slog.Logger) error {
	if instance == "" {
		return errors.New("kube: reap: no instance named")
	}
	_, err := e.Reap(ctx, engine.LabelInstance, instance)
	if instance == e.c.cfg.Instance && e.Node() != "" {
		err = errors.Join(err, e.lease.release(ctx, ""))
	}
	return err
}

// Watch has nothing to follow: a pod's end, an OOM kill included, is in its
// status (Wait). It returns when ctx ends.
func (e *Engine) Watch(ctx context.Context, _ *slog.Logger, _ func(engine.Event)) { <-ctx.Done() }

// taintKeys are the keys of taints as ForeignTaints gives them, as the
// flag takes them.
func taintKeys(taints []string) string {
	keys := make([]string, len(taints))
	for i, t := range taints {
		keys[i], _, _ = strings.Cut(t, ":")
	}
	return strings.Join(slices.Compact(keys), ",")
}
