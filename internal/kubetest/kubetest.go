// Package kubetest gives tests a workshop whose one engine is the test
// cluster that make test-k8s starts (k8s/run.sh), named by
// LIMITLAB_TEST_KUBECONFIG, with the binary whose image it imported in
// LIMITLAB_TEST_WORKLOAD_BIN. Without them a test fails: it never skips.
// LIMITLAB_K8S_NODE pins the engine to one node (the cgroup v2 VM's, in
// run.sh's two-node round); by default it takes the first Ready one.
package kubetest

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/kube"
	"github.com/limitlab/limitlab/internal/workshop"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Instance labels the tests' pods.
const Instance = "kube-test"

// Namespace is where the tests' pods run.
const Namespace = "limitlab"

// Manager connects to the test cluster and returns a workshop whose one
// engine is it, shut down (its pods removed) when the test ends, with a
// client of the cluster's own to check what the server did.
func Manager(t testing.TB, options ...func(*workshop.Options)) (*workshop.Manager, kubernetes.Interface) {
	t.Helper()
	return manager(t, false, options...)
}

// ThroughSampler is Manager reading the pods' cgroup files through the
// node's sampler (kube.Config.ViaSampler), which k8s/run.sh
// deploys for the test that wants it.
func ThroughSampler(t testing.TB, options ...func(*workshop.Options)) (*workshop.Manager, kubernetes.Interface) {
	t.Helper()
	return manager(t, true, options...)
}

func manager(t testing.TB, viaSampler bool, options ...func(*workshop.Options)) (*workshop.Manager, kubernetes.Interface) {
	t.Helper()
	kc, bin := os.Getenv("LIMITLAB_TEST_KUBECONFIG"), os.Getenv("LIMITLAB_TEST_WORKLOAD_BIN")
	if kc == "" || bin == "" {
		t.Fatal("LIMITLAB_TEST_KUBECONFIG and LIMITLAB_TEST_WORKLOAD_BIN name no cluster and image: run make test-k8s, which starts one")
	}
	img, err := engine.OCIImageRef(bin)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kube.Connect(kube.Config{Kubeconfig: kc, Namespace: Namespace, Instance: Instance, CgroupRoot: "/sys/fs/cgroup", Image: img, ViaSampler: viaSampler})
	if err != nil {
		t.Fatal(err)
	}
	e := cl.Engine(Node())
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	prepare := func(ctx context.Context) (engine.HostInfo, string, error) {
		h, err := e.Probe(ctx)
		return h, img, err
	}
	opts := workshop.Options{Instance: Instance, Log: slog.Default(), Quotas: &workshop.Quotas{},
		Pool: []workshop.PoolEngine{{Name: "kubernetes", Address: cl.Server(), Driver: e, Prepare: prepare}}}
	m := enginetest.Managed(t, nil, opts, options...)
	enginetest.WaitFor(t, 30*time.Second, "the cluster's node to be ready", func() bool {
		for _, e := range m.Pool().Engines() {
			if e.Up {
				return true
			}
		}
		return false
	})
	return m, cs
}

// Node is the node the tests' runs take: LIMITLAB_K8S_NODE, or "" for
// the first Ready one.
func Node() string { return os.Getenv("LIMITLAB_K8S_NODE") }

// Admin is a client of the test cluster as its administrator
// (LIMITLAB_ADMIN_KUBECONFIG), for a test that plays another party than
// the server: a privileged pod's author, a node's other owner.
func Admin(t testing.TB) kubernetes.Interface {
	t.Helper()
	return kubernetes.NewForConfigOrDie(AdminConfig(t))
}

// AdminConfig is the administrator's client configuration, for a test
// that needs a client of another kind (dynamic, discovery).
func AdminConfig(t testing.TB) *rest.Config {
	t.Helper()
	kc := os.Getenv("LIMITLAB_ADMIN_KUBECONFIG")
	if kc == "" {
		t.Fatal("LIMITLAB_ADMIN_KUBECONFIG names no cluster: run make test-k8s, which starts one")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
