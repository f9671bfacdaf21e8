package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/sampler"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Cluster is a Kubernetes cluster as an engine of runs: the namespace its
// lane pods go to and the node they run on.
type Cluster struct {
	cs       kubernetes.Interface
	server   string
	ns       string
	instance string
	// cgroupRoot is where the node's cgroup files are seen from here:
	// the server reads them when it runs on the node.
	cgroupRoot string
	// pinned is the one node of a cluster made an engine per node
	// (ForNode); empty: the first Ready node.
	pinned string

	mu        sync.Mutex
	node      string                    // the node runs take, chosen by Probe
	takenBy   string                    // the run that holds the node (take)
	stopRenew func()                    // stops the renewal of takenBy's lease, and waits
	pending   map[string]engine.NewLane // created, not yet started: a pod starts when it is made
	started   map[string]string         // a started pod's container id, by pod name
	exclusive map[string]bool           // started pods with CPUs of their own (the static CPU manager)
	image     string                    // the workload image (UseImage), for the CPU manager probe
	policies  map[string]cpuPolicy      // each node's CPU manager policy, by its uid
	uids      map[string]string         // a started pod's uid, by pod name
	// smp is the node's sampler, when its pods' cgroup files are read
	// through it (not this machine's node, or viaSampler).
	smp        *sampler.Client
	viaSampler bool
}

// Connect reads a kubeconfig file (kubectl's format) and returns the
// cluster it names. instance is the server's id, on every pod it makes.
func Connect(kubeconfig, namespace, instance, cgroupRoot string) (*Cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kube: read %s: %w", kubeconfig, err)
	}
	cfg.UserAgent = "limitlab"
	cfg.Timeout = 30 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	if namespace == "" {
		namespace = "default"
	}
	return newCluster(cs, cfg.Host, namespace, instance, cgroupRoot, ""), nil
}

func newCluster(cs kubernetes.Interface, server, namespace, instance, cgroupRoot, node string) *Cluster {
	return &Cluster{cs: cs, server: server, ns: namespace, instance: instance, cgroupRoot: cgroupRoot, pinned: node,
		pending: map[string]engine.NewLane{}, started: map[string]string{}, policies: map[string]cpuPolicy{}, exclusive: map[string]bool{}, uids: map[string]string{}}
}

// Namespace is where the cluster's lane pods go.
func (c *Cluster) Namespace() string { return c.ns }

// Node is the node runs take.
func (c *Cluster) Node() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.node
}

// Probe finds a Ready node for runs and describes it as a host: its
// allocatable CPUs and memory (what pods may have), its kubelet and
// kernel, which Docker flags a pod has words for, and where its cgroup
// files are read.
func (c *Cluster) Probe(ctx context.Context) (engine.HostInfo, error) {
	ver, err := c.cs.Discovery().ServerVersion()
	if err != nil {
		return engine.HostInfo{}, fmt.Errorf("kube: the API server does not answer: %w", err)
	}
	n, err := c.pickNode(ctx)
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
	kn.CgroupRoot, kn.CgroupVersion, kn.Local = c.localCgroups()
	c.mu.Lock()
	via := c.viaSampler
	c.mu.Unlock()
	var smp *sampler.Client
	switch {
	case via || !thisMachine(n):
		// Another machine's node (kubelet's boot id is not this one's):
		// its sampler reads the pods' cgroup files.
		if smp, err = c.samplerOn(ctx, n.Name); err != nil {
			return engine.HostInfo{}, fmt.Errorf("kube: node %s is not the machine the server runs on, and its sampler does not answer: %w", n.Name, err)
		}
		kn.Local, kn.Sampler, kn.CgroupVersion = false, smp.Address(), smp.CgroupVersion()
	case !kn.Local:
		return engine.HostInfo{}, fmt.Errorf("kube: node %s's pod cgroups (kubepods) are not visible under %s", n.Name, c.cgroupRoot)
	}
	c.mu.Lock()
	c.node, c.smp = n.Name, smp
	c.mu.Unlock()
	kn.CPUManager, kn.CPUManagerNote = c.cpuManager(ctx, n, kn.NCPU)
	return engine.KubernetesHost(kn), nil
}

func nodeReady(n corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// localCgroups says whether kubelet's pod cgroups are visible under the
// cgroup root, and the hierarchy's version.
func (c *Cluster) localCgroups() (root, version string, ok bool) {
	root = c.cgroupRoot
	if fileExists(filepath.Join(root, "cgroup.controllers")) {
		return root, "2", fileExists(filepath.Join(root, "kubepods")) || fileExists(filepath.Join(root, "kubepods.slice"))
	}
	return root, "1", fileExists(filepath.Join(root, "cpu", "kubepods")) || fileExists(filepath.Join(root, "cpu", "kubepods.slice"))
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Alive says whether the API server answers and the run's node is still
// Ready (a node is all the server may read beyond its namespace).
func (c *Cluster) Alive(ctx context.Context) error {
	name := c.Node()
	if name == "" {
		return fmt.Errorf("kube: no node probed")
	}
	n, err := c.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if !nodeReady(*n) {
		return fmt.Errorf("kube: node %s is not Ready", name)
	}
	return nil
}

// Reap removes the pods of a run, or (instance) those a server made.
func (c *Cluster) Reap(ctx context.Context, label, value string) (int, error) {
	sel := label + "=" + value
	list, err := c.pods(ctx, sel)
	if err != nil {
		return 0, fmt.Errorf("kube: list pods %s: %w", sel, err)
	}
	zero := int64(0)
	n := 0
	var errs []error
	for _, p := range list {
		if err := c.cs.CoreV1().Pods(c.ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !notFound(err) {
			errs = append(errs, err)
			continue
		}
		n++
	}
	// The pods' cgroups and processes go when kubelet has stopped them:
	// the node is free for another run only then.
	for end := time.Now().Add(60 * time.Second); n > 0 && time.Now().Before(end); {
		left, err := c.pods(ctx, sel)
		if err != nil || len(left) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return n, errors.Join(errs...)
}

// containerID is a status's container id without its runtime's scheme.
func containerID(s string) string {
	if i := strings.Index(s, "://"); i >= 0 {
		return s[i+3:]
	}
	return s
}

// ReapRun removes what is left of a run's pods.
func (c *Cluster) ReapRun(ctx context.Context, runID string, _ *slog.Logger) error {
	_, err := c.Reap(ctx, engine.LabelRun, runID)
	return errors.Join(err, c.release(ctx, runID))
}

// Watch has nothing to follow: a pod's end, an OOM kill included, is in its
// status (Wait). It returns when ctx ends.
func (c *Cluster) Watch(ctx context.Context, _ *slog.Logger, _ func(engine.Event)) { <-ctx.Done() }

// ReapInstance removes every pod a server instance made.
func (c *Cluster) ReapInstance(ctx context.Context, instance string, _ *slog.Logger) error {
	if instance == "" {
		return errors.New("kube: reap: no instance named")
	}
	_, err := c.Reap(ctx, engine.LabelInstance, instance)
	if instance == c.instance && c.Node() != "" {
		// A node this server took and did not give back (it died).
		err = errors.Join(err, c.release(ctx, ""))
	}
	return err
}

// Server is the API server's address.
func (c *Cluster) Server() string { return c.server }

// HasImage says whether the node runs take has the image: kubelet lists
// the images it holds in the node's status.
func (c *Cluster) HasImage(ctx context.Context, ref string) (bool, error) {
	n, err := c.cs.CoreV1().Nodes().Get(ctx, c.Node(), metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("kube: node %s: %w", c.Node(), err)
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
