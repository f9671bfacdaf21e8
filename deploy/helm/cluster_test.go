//go:build k8s

package helm_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/kubetest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
)

// warnings keeps what the API server warned of, as Pod Security
// admission does for a pod that would break its namespace's warn level.
type warnings struct {
	mu   sync.Mutex
	said []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.said = append(w.said, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	said := w.said
	w.said = nil
	return said
}

// The chart as `helm template` writes it, with the release's and the
// lanes' namespaces made and labelled restricted: the cluster's API server
// accepts every object under a server-side dry run, and admits the
// dashboard's pod under the restricted level and the sampler's in its own
// namespace, with no warning. Only the two namespaces are made, and they
// are removed.
func TestTheClusterAcceptsTheChart(t *testing.T) {
	cfg := kubetest.AdminConfig(t)
	warned := &warnings{}
	cfg.WarningHandlerWithContext = warned
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const release, lanes = "limitlab-chart", "limitlab-chart-lanes"
	objs, err := renderAs(t, release, release, map[string]any{"lanes": map[string]any{"namespace": lanes}})
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	for _, ns := range []string{release, lanes} {
		made := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
			"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted"}}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, made, metav1.CreateOptions{}); err != nil {
			t.Fatalf("namespace %s: %v", ns, err)
		}
		t.Cleanup(func() {
			err := cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("namespace %s left: %v", ns, err)
			}
		})
	}

	dyn := dynamic.NewForConfigOrDie(cfg)
	dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	groups, err := restmapper.GetAPIGroupResources(dc)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	apply := func(o *unstructured.Unstructured) error {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return err
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if o.GetNamespace() != "" {
			ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		_, err = ri.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "limitlab-chart-test", Force: true, DryRun: []string{metav1.DryRunAll}})
		return err
	}
	for _, o := range objs {
		if err := apply(o); err != nil {
			t.Errorf("the API server refuses %s: %v", key(o), err)
		}
		checkWarnings(t, o, warned.take())
	}

	// A Deployment or DaemonSet is admitted whatever its pods are; their
	// pods are judged by the namespace's Pod Security level.
	for _, owner := range []*unstructured.Unstructured{find(t, objs, "Deployment", release), find(t, objs, "DaemonSet", "limitlab-sampler")} {
		tmpl, _, _ := unstructured.NestedMap(owner.Object, "spec", "template")
		pod := &corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, pod); err != nil {
			t.Fatal(err)
		}
		pod.Name, pod.Namespace = strings.ToLower(owner.GetKind())+"-dry-run", owner.GetNamespace()
		// The release's account was only dry-run above: the pod is
		// admitted under its namespace's default one.
		pod.Spec.ServiceAccountName = ""
		if _, err := cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("the pod of %s is refused: %v", key(owner), err)
		}
		checkWarnings(t, owner, warned.take())
	}
}

// checkWarnings fails on any warning of the API server's but the one the
// sampler's namespace gives by design: it warns at baseline, and the
// sampler's read-only hostPath of the cgroup files is beyond it.
func checkWarnings(t *testing.T, o *unstructured.Unstructured, said []string) {
	t.Helper()
	for _, w := range said {
		if o.GetNamespace() == "limitlab-sampler" && strings.Contains(w, `"baseline:latest": hostPath volumes (volume "cgroup")`) {
			t.Logf("%s, in the sampler's namespace: %s", key(o), w)
			continue
		}
		t.Errorf("the API server warns of %s: %s", key(o), w)
	}
}
