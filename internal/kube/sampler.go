package kube

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/sampler"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// The sampler beside each node (deploy/kubernetes/sampler.yaml): a
// DaemonSet of `limitlab sampler` in a namespace of its own, reading the
// node's cgroup files from a read-only hostPath, and serving them over
// TLS on its pod's address to whoever sends the token in its Secret. The
// Secret holds the token, the sampler's certificate and key (for the name
// SamplerServerName), and the CA that signed them, which the server
// verifies the sampler with.
const (
	SamplerNamespace  = "limitlab-sampler"
	SamplerApp        = "limitlab-sampler" // its pods' app.kubernetes.io/name
	SamplerSecret     = "limitlab-sampler" // token, tls.crt, tls.key, ca.crt
	SamplerServerName = "limitlab-sampler" // the name its certificate is for
	SamplerPort       = 7071
)

// ReadThroughSampler makes the cluster read its pods' cgroup files
// through the node's sampler even where the server could read them
// itself: to measure the sampler, and to test it on a one-node cluster.
func (c *Cluster) ReadThroughSampler() {
	c.mu.Lock()
	c.viaSampler = true
	c.mu.Unlock()
}

// sampler is the client of the sampler on node, found anew when its pod's
// address changed: its Running pod there, reached at its pod address with
// the token from its Secret, which must answer a ping.
func (c *Cluster) samplerOn(ctx context.Context, node string) (*sampler.Client, error) {
	list, err := c.cs.CoreV1().Pods(SamplerNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name=" + SamplerApp,
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("list the sampler pods: %w", err)
	}
	var ip string
	for _, p := range list.Items {
		if p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning && net.ParseIP(p.Status.PodIP) != nil {
			ip = p.Status.PodIP
			break
		}
	}
	if ip == "" {
		return nil, fmt.Errorf("no sampler pod runs on node %s (deploy/kubernetes/sampler.yaml, in namespace %s)", node, SamplerNamespace)
	}
	address := "https://" + net.JoinHostPort(ip, strconv.Itoa(SamplerPort))
	c.mu.Lock()
	smp := c.smp
	c.mu.Unlock()
	if smp != nil && smp.Address() == address {
		return smp, smp.Ping(ctx)
	}
	sec, err := c.cs.CoreV1().Secrets(SamplerNamespace).Get(ctx, SamplerSecret, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("the sampler's Secret: %w", err)
	}
	token := strings.TrimSpace(string(sec.Data["token"]))
	if len(token) < sampler.MinToken {
		return nil, fmt.Errorf("the sampler's token (Secret %s/%s, key token) has under %d characters", SamplerNamespace, SamplerSecret, sampler.MinToken)
	}
	ca := sec.Data["ca.crt"]
	if len(ca) == 0 {
		return nil, fmt.Errorf("the sampler serves TLS on Kubernetes: its Secret %s/%s needs the CA that signed its certificate under ca.crt (deploy/kubernetes/sampler.yaml)", SamplerNamespace, SamplerSecret)
	}
	smp, err = sampler.NewClientTLS(address, token, ca, SamplerServerName)
	if err != nil {
		return nil, err
	}
	if err := smp.Ping(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.smp = smp
	c.mu.Unlock()
	return smp, nil
}

// openPod opens a started pod's container's cgroup files: here, or
// through the node's sampler.
func (c *Cluster) openPod(ctx context.Context, uid, cid string) (engine.CgroupFiles, error) {
	c.mu.Lock()
	smp := c.smp
	c.mu.Unlock()
	if smp != nil {
		return smp.OpenPod(ctx, uid, cid)
	}
	return engine.FindPodCgroup(c.cgroupRoot, uid, cid)
}
