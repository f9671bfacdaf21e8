package kube

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

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

// samplerLocator finds the sampler on a node and keeps its client while
// its pod's address stays the same.
type samplerLocator struct {
	c *client

	mu  sync.Mutex
	smp *sampler.Client // nil: the pods' cgroup files are read here
}

// current is the sampler the pods' cgroup files are read through; nil if
// they are read here.
func (s *samplerLocator) current() *sampler.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.smp
}

// readHere reads the pods' cgroup files here from now on.
func (s *samplerLocator) readHere() {
	s.mu.Lock()
	s.smp = nil
	s.mu.Unlock()
}

// locate finds the sampler on node, and reads the pods' cgroup files
// through it from now on: its Running pod there, reached at its pod
// address with the token from its Secret, which must answer a ping. Its
// client is made anew when its pod's address changed.
func (s *samplerLocator) locate(ctx context.Context, node string) (*sampler.Client, error) {
	list, err := s.c.cs.CoreV1().Pods(SamplerNamespace).List(ctx, metav1.ListOptions{
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
	if smp := s.current(); smp != nil && smp.Address() == address {
		return smp, smp.Ping(ctx)
	}
	sec, err := s.c.cs.CoreV1().Secrets(SamplerNamespace).Get(ctx, SamplerSecret, metav1.GetOptions{})
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
	smp, err := sampler.NewClientTLS(address, token, ca, SamplerServerName)
	if err != nil {
		return nil, err
	}
	if err := smp.Ping(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.smp = smp
	s.mu.Unlock()
	return smp, nil
}

// files opens a started pod's container's cgroup files: through the
// node's sampler if there is one (remote), else here under root.
func (s *samplerLocator) files(ctx context.Context, uid, cid string) (engine.CgroupFiles, bool, error) {
	if smp := s.current(); smp != nil {
		cg, err := smp.OpenPod(ctx, uid, cid)
		return cg, true, err
	}
	cg, err := engine.FindPodCgroup(s.c.cfg.CgroupRoot, uid, cid)
	return cg, false, err
}
