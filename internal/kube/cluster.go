package kube

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The package's four concerns, a file and a type each, over one client
// (client.go):
//   - the pod backend, the runner's Backend (pods.go: Pods);
//   - the node lease, a run's hold on its node (lease.go: nodeLease);
//   - the CPU manager probe (cpumanager.go: probeCPUManager);
//   - the sampler locator (sampler.go: samplerLocator).
// An Engine (engine.go) is one node of the cluster as an engine of the
// pool, made of the four; a Cluster is the connection its engines share.

// Config is what a cluster is connected with; nothing of it changes later.
type Config struct {
	// Kubeconfig is the kubeconfig file (kubectl's format).
	Kubeconfig string
	// Namespace is where the lane pods go ("default" if empty).
	Namespace string
	// Instance is the server's id, on every pod and node mark it makes.
	Instance string
	// CgroupRoot is where the node's cgroup files are seen from here: the
	// server reads them itself when it runs on the node.
	CgroupRoot string
	// Image is the workload image on the nodes, which the CPU manager
	// probe runs (no probe without it).
	Image string
	// ViaSampler reads the pods' cgroup files through the node's sampler
	// even where the server could read them itself: to measure the
	// sampler, and to test it on a one-node cluster.
	ViaSampler bool
	// Tolerate are the keys of taints that others put on nodes which the
	// lanes may tolerate all the same (-kube-tolerate): a node tainted
	// with any other key never takes a lane.
	Tolerate []string
}

// Cluster is a Kubernetes cluster the server runs lanes on: the connection
// its engines share, one an engine per node (Engine).
type Cluster struct {
	c *client
}

// Connect reads cfg's kubeconfig and returns the cluster it names.
func Connect(cfg Config) (*Cluster, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kube: read %s: %w", cfg.Kubeconfig, err)
	}
	rc.UserAgent = "limitlab"
	rc.Timeout = 30 * time.Second
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	return newCluster(cs, rc.Host, cfg), nil
}

func newCluster(cs kubernetes.Interface, server string, cfg Config) *Cluster {
	cfg.Namespace = cmp.Or(cfg.Namespace, "default")
	return &Cluster{c: &client{cs: cs, server: server, cfg: cfg}}
}

// Server is the API server's address.
func (cl *Cluster) Server() string { return cl.c.server }

// Namespace is where the cluster's lane pods go.
func (cl *Cluster) Namespace() string { return cl.c.cfg.Namespace }

// Nodes lists the nodes runs may take, by name: every node not cordoned.
// Whether each is Ready, and can be read from here, is its engine's probe
// to say.
func (cl *Cluster) Nodes(ctx context.Context) ([]string, error) {
	list, err := cl.c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("kube: list nodes: %w", err)
	}
	var out []string
	for _, n := range list.Items {
		if !n.Spec.Unschedulable {
			out = append(out, n.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Engine is the cluster as an engine of the pool on one node: its runs go
// there, and it reaps only the pods there. With node empty, runs go to the
// first Ready node its probe finds (a cluster of one node).
//
// A cluster of several nodes is several engines, one a node: the fair
// queue places each run on a free node as it places runs on free engines,
// and each run takes its whole node (nodeLease).
func (cl *Cluster) Engine(node string) *Engine { return newEngine(cl.c, node) }
