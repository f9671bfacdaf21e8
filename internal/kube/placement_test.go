package kube

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// A lane's pod names no node: it requires its run's node through node
// affinity, so that the scheduler places it and keeps every taint it does
// not tolerate. It tolerates its run's mark and the keys the facilitator
// named, nothing else.
func TestALanesPodIsPlacedByTheScheduler(t *testing.T) {
	lane := specs.PlannedLane{Name: "a", Workload: specs.Workload{Kind: "spin", Seconds: 1}, Pod: &specs.Pod{LimitMilliCPU: 500}, Target: -1}
	nl := engine.NewLane{RunID: "run1", Index: 0, Lane: lane, Image: engine.OCIRepo}
	for _, tc := range []struct {
		pl   Placement
		keys []string
	}{
		{Placement{Node: "n1"}, []string{TaintRun}},
		{Placement{Node: "n1", Tolerate: []string{"node-role.kubernetes.io/control-plane"}}, []string{TaintRun, "node-role.kubernetes.io/control-plane"}},
	} {
		p := PodSpec(nl, tc.pl, nil)
		if p.Spec.NodeName != "" {
			t.Errorf("the pod names node %q: the scheduler is bypassed", p.Spec.NodeName)
		}
		a := p.Spec.Affinity
		if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
			t.Fatalf("the pod requires no node: %+v", a)
		}
		terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(terms) != 1 || len(terms[0].MatchFields) != 1 || terms[0].MatchFields[0].Key != "metadata.name" || !slices.Equal(terms[0].MatchFields[0].Values, []string{"n1"}) {
			t.Errorf("the pod's node affinity: %+v, want metadata.name in [n1]", terms)
		}
		var keys []string
		for _, tt := range p.Spec.Tolerations {
			keys = append(keys, tt.Key)
			if tt.Key == TaintRun && (tt.Value != "run1" || tt.Effect != corev1.TaintEffectNoSchedule) {
				t.Errorf("the run's toleration: %+v", tt)
			}
		}
		if !slices.Equal(keys, tc.keys) {
			t.Errorf("tolerations %v, want %v", keys, tc.keys)
		}
	}
	if p := PodSpec(nl, Placement{}, nil); p.Spec.Affinity != nil {
		t.Errorf("a pod of no node (an imported run's YAML) requires one: %+v", p.Spec.Affinity)
	}
}

// A node tainted NoSchedule or NoExecute by someone else is no engine's:
// its probe says why and what flag would let lanes there, and an engine of
// the whole cluster picks another node. A run's own mark and a
// PreferNoSchedule taint keep no node out; a key the facilitator named
// lets it in.
func TestANodeTaintedBySomeoneElseTakesNoLane(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "cpu", "kubepods"), 0o755); err != nil {
		t.Fatal(err)
	}
	tainted := fakeNode("a-tainted", true, false, bootID)
	tainted.Spec.Taints = []corev1.Taint{
		{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule},
		{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule},
	}
	here := fakeNode("here", true, false, bootID)
	// A PreferNoSchedule taint, and the node's own condition as the node
	// controller marks it for a moment once kubelet restarts.
	here.Spec.Taints = []corev1.Taint{{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule},
		{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}}
	cs := fake.NewSimpleClientset(tainted, here)
	ctx := context.Background()
	_, err := fakeEngine(cs, root, "a-tainted").Probe(ctx)
	if err == nil || !strings.Contains(err.Error(), "node-role.kubernetes.io/control-plane:NoSchedule") || !strings.Contains(err.Error(), "-kube-tolerate node-role.kubernetes.io/control-plane") {
		t.Errorf("probe of a node tainted by someone else: %v", err)
	}
	n, err := fakeEngine(cs, root, "").pickNode(ctx)
	if err != nil || n.Name != "here" {
		t.Errorf("an engine of the whole cluster picked %q, %v; want here", n.Name, err)
	}
	tolerant := newCluster(cs, "https://fake", Config{Namespace: "limitlab", Instance: "me", CgroupRoot: root, Tolerate: []string{"node-role.kubernetes.io/control-plane"}})
	if n, err := tolerant.Engine("a-tainted").pickNode(ctx); err != nil || n.Name != "a-tainted" {
		t.Errorf("with the key tolerated: %q, %v", n.Name, err)
	}
	if got := ForeignTaints(*tainted, nil); !slices.Equal(got, []string{"node-role.kubernetes.io/control-plane:NoSchedule"}) {
		t.Errorf("ForeignTaints = %v", got)
	}
}
