//go:build k8s

package kube_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/kube"
	"github.com/limitlab/limitlab/internal/kubetest"
	"github.com/limitlab/limitlab/internal/runner"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTheRestrictedNamespaceAdmitsTheLanes: the lanes' namespace enforces
// the restricted Pod Security Standard (deploy/kubernetes/rbac.yaml). A
// run's pods are admitted there, each with its local storage and its life
// bounded and a NetworkPolicy of its run's while it runs, and its node
// held by a lease; a privileged pod is refused.
func TestTheRestrictedNamespaceAdmitsTheLanes(t *testing.T) {
	m, cs := cluster(t)
	admin := kubetest.Admin(t)
	ctx := context.Background()
	ns, err := admin.CoreV1().Namespaces().Get(ctx, kubetest.Namespace, metav1.GetOptions{})
	if err != nil || ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Fatalf("the lanes' namespace: %v %v, want it labelled to enforce restricted", ns.Labels, err)
	}
	spec, p := spinSpec(t, m)
	r, err := m.SubmitFrom(spec, p, "", "")
	if err != nil {
		t.Fatal(err)
	}
	enginetest.WaitFor(t, time.Minute, "the lane's pod to run", func() bool { return r.View().Lanes[0].State == runner.LaneRunning })
	pod, err := cs.CoreV1().Pods(kubetest.Namespace).Get(ctx, engine.ContainerName(r.ID(), 0), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := pod.Spec.ActiveDeadlineSeconds; d == nil || *d < 20 || *d > 20+300 {
		t.Errorf("the pod's activeDeadlineSeconds %v, want the run's 20 s and a little more", d)
	}
	if q, ok := pod.Spec.Containers[0].Resources.Limits[corev1.ResourceEphemeralStorage]; !ok || q.Cmp(resource.MustParse("1Mi")) < 0 {
		t.Errorf("the pod's ephemeral-storage limit: %v", pod.Spec.Containers[0].Resources.Limits)
	}
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.SizeLimit == nil {
			t.Errorf("emptyDir %s has no sizeLimit", v.Name)
		}
	}
	if _, err := admin.NetworkingV1().NetworkPolicies(kubetest.Namespace).Get(ctx, "limitlab-run-"+r.ID(), metav1.GetOptions{}); err != nil {
		t.Errorf("the run's NetworkPolicy while it runs: %v", err)
	}
	l, err := cs.CoordinationV1().Leases(kubetest.Namespace).Get(ctx, "limitlab-node-"+theNode(t, cs).Name, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != kubetest.Instance+"/"+r.ID() {
		t.Errorf("the node's lease while the run runs: %+v %v", l, err)
	}
	v := enginetest.WaitDone(t, r, 2*time.Minute)
	if v.State != runner.StateDone {
		t.Errorf("the run in the restricted namespace: %s %s", v.State, v.Error)
	}
	if _, err := admin.NetworkingV1().NetworkPolicies(kubetest.Namespace).Get(ctx, "limitlab-run-"+r.ID(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the run's NetworkPolicy after it: %v", err)
	}
	if _, err := cs.CoordinationV1().Leases(kubetest.Namespace).Get(ctx, "limitlab-node-"+theNode(t, cs).Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the node's lease after the run: %v", err)
	}

	// The cluster allows privileged pods (kube-apiserver
	// --allow-privileged, as most do); the namespace does not, nor a pod
	// that leaves its security context unset.
	yes := true
	for name, sc := range map[string]*corev1.SecurityContext{"privileged": {Privileged: &yes}, "unhardened": nil} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-intruder"}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: engine.OCIRepo, SecurityContext: sc}}}}
		_, err := admin.CoreV1().Pods(kubetest.Namespace).Create(ctx, p, metav1.CreateOptions{})
		if err == nil {
			_ = admin.CoreV1().Pods(kubetest.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
		}
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "restricted`) {
			t.Errorf("a %s pod in the lanes' namespace: %v, want it forbidden by PodSecurity", name, err)
		}
	}
}

// TestTheServerMayChangeOnlyItsOwnMarksOnANode: the server's account may
// update nodes (RBAC cannot say which fields), and the admission policy
// in deploy/kubernetes/rbac.yaml refuses all but its own labels and taint.
func TestTheServerMayChangeOnlyItsOwnMarksOnANode(t *testing.T) {
	_, cs := cluster(t)
	ctx := context.Background()
	update := func(change func(n *corev1.Node)) error {
		n := theNode(t, cs)
		change(n)
		_, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	}
	// The policy may take a moment to be in force after it is made.
	enginetest.WaitFor(t, 30*time.Second, "the node policy to refuse another label", func() bool {
		err := update(func(n *corev1.Node) { n.Labels["intruder"] = "yes" })
		if err == nil {
			_ = update(func(n *corev1.Node) { delete(n.Labels, "intruder") })
		}
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err)
	})
	for name, change := range map[string]func(n *corev1.Node){
		"cordon": func(n *corev1.Node) { n.Spec.Unschedulable = true },
		"another taint": func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "intruder", Effect: corev1.TaintEffectNoExecute})
		},
		"an annotation": func(n *corev1.Node) {
			if n.Annotations == nil {
				n.Annotations = map[string]string{}
			}
			n.Annotations["intruder"] = "yes"
		},
		"a label taken off": func(n *corev1.Node) { delete(n.Labels, "kubernetes.io/hostname") },
		"its own taint, evicting": func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: kube.TaintRun, Value: "policy-test", Effect: corev1.TaintEffectNoExecute})
		},
	} {
		if err := update(change); err == nil || !strings.Contains(err.Error(), "Limit Lab may") {
			t.Errorf("the server's account: %s: %v, want it refused by the policy", name, err)
		}
	}
	if err := update(func(n *corev1.Node) {
		n.Labels[engine.LabelRun] = "policy-test"
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: kube.TaintRun, Value: "policy-test", Effect: corev1.TaintEffectNoSchedule})
	}); err != nil {
		t.Errorf("its own label and taint: %v", err)
	}
	if err := update(func(n *corev1.Node) {
		delete(n.Labels, engine.LabelRun)
		n.Spec.Taints = nil
		for _, tt := range theNode(t, cs).Spec.Taints {
			if tt.Key != kube.TaintRun {
				n.Spec.Taints = append(n.Spec.Taints, tt)
			}
		}
	}); err != nil {
		t.Errorf("taking its own label and taint off: %v", err)
	}
}
