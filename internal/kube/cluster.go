package kube

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
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
	// Kubeconfig is the kubeconfig file (kubectl's format); without it
	// the cluster is found as kubectl finds it: the files $KUBECONFIG
	// lists, else ~/.kube/config, else, in a pod, the pod's own service
	// account (in-cluster).
	Kubeconfig string
	// Context is the kubeconfig's context to use (its current one if
	// empty).
	Context string
	// Namespace is where the lane pods go (engine.DefaultNamespace if
	// empty).
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

// Connect finds the cluster as kubectl would (Config.Kubeconfig) and
// returns it.
func Connect(cfg Config) (*Cluster, error) {
	rc, err := restConfig(cfg)
	if err != nil {
		return nil, err
	}
	rc.UserAgent = "limitlab"
	// Streams (a lane's log, the watch of its pod) last as long as the
	// lane, bounded by their contexts; every other call by this.
	long := rest.CopyConfig(rc)
	rc.Timeout = 30 * time.Second
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	streams, err := kubernetes.NewForConfig(long)
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	cl := newCluster(cs, rc.Host, cfg)
	cl.c.streams = streams
	return cl, nil
}

// newCluster is a cluster reached through cs, for streams too.
func newCluster(cs kubernetes.Interface, server string, cfg Config) *Cluster {
	cfg.Namespace = cmp.Or(cfg.Namespace, engine.DefaultNamespace)
	return &Cluster{c: &client{cs: cs, streams: cs, server: server, cfg: cfg}}
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

// restConfig is the client configuration kubectl's rules give: the
// kubeconfig named, else those $KUBECONFIG lists, else ~/.kube/config,
// else in a pod its in-cluster configuration; with the context named, or
// the kubeconfig's current one.
func restConfig(cfg Config) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = cfg.Kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: cfg.Context})
	rc, err := cc.ClientConfig()
	if err != nil {
		where := cfg.Kubeconfig
		if where == "" {
			where = strings.Join(rules.Precedence, ", ")
		}
		return nil, fmt.Errorf("kube: no cluster found in %s (nor in a pod's own service account): %w", cmp.Or(where, "~/.kube/config"), err)
	}
	return rc, nil
}
