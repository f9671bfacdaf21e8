package kube

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// A cluster of several nodes is several engines of the pool, one a node
// (ForNode): the fair queue places each run on a free node as it places
// runs on free engines, and each run takes its whole node (take).

// Nodes lists the nodes runs may take, by name: every node not cordoned.
// Whether each is Ready, and can be read from here, is its engine's probe
// to say.
func (c *Cluster) Nodes(ctx context.Context) ([]string, error) {
	list, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
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

// ForNode is the cluster as an engine of one node: its runs go there, and
// it reaps only the pods there.
func (c *Cluster) ForNode(name string) *Cluster {
	c.mu.Lock()
	image := c.image
	c.mu.Unlock()
	nc := newCluster(c.cs, c.server, c.ns, c.instance, c.cgroupRoot, name)
	nc.image = image
	return nc
}

// pickNode is the node runs take: the pinned one, which must be Ready and
// not cordoned, or else the first Ready one by name.
func (c *Cluster) pickNode(ctx context.Context) (corev1.Node, error) {
	if c.pinned != "" {
		n, err := c.cs.CoreV1().Nodes().Get(ctx, c.pinned, metav1.GetOptions{})
		switch {
		case err != nil:
			return corev1.Node{}, fmt.Errorf("kube: node %s: %w", c.pinned, err)
		case n.Spec.Unschedulable:
			return corev1.Node{}, fmt.Errorf("kube: node %s is cordoned", c.pinned)
		case !nodeReady(*n):
			return corev1.Node{}, fmt.Errorf("kube: node %s is not Ready", c.pinned)
		}
		if err := c.clearStale(ctx, *n); err != nil {
			return corev1.Node{}, err
		}
		return *n, nil
	}
	nodes, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return corev1.Node{}, fmt.Errorf("kube: list nodes: %w", err)
	}
	var ready []corev1.Node
	var held error
	for _, n := range nodes.Items {
		if !nodeReady(n) || n.Spec.Unschedulable {
			continue
		}
		if err := c.clearStale(ctx, n); err != nil {
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

// pods lists the pods of the namespace with the label selector; on a
// cluster pinned to a node, only that node's.
func (c *Cluster) pods(ctx context.Context, sel string) ([]corev1.Pod, error) {
	opts := metav1.ListOptions{LabelSelector: sel}
	if c.pinned != "" {
		opts.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", c.pinned).String()
	}
	list, err := c.cs.CoreV1().Pods(c.ns).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := list.Items[:0]
	for _, p := range list.Items {
		if c.pinned == "" || p.Spec.NodeName == c.pinned {
			out = append(out, p)
		}
	}
	return out, nil
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
