//go:build k8s

package kube_test

import (
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/kubetest"
	"github.com/limitlab/limitlab/internal/runner"
)

// On the cgroup v2 node (the VM's, in k8s/run.sh's two-node round) a pod
// over its CPU limit is read through the node's sampler: its cpu.weight,
// cpu.max and memory.max read back as the node's runtime writes them,
// and its pressure stall figures (PSI, which v1 lacks) drawn as samples.
func TestAPodOnTheV2Node(t *testing.T) {
	if kubetest.Node() == "" {
		t.Fatal("LIMITLAB_K8S_NODE names no node: this test runs on the cgroup v2 node of k8s/run.sh's two-node round")
	}
	m, cs := cluster(t)
	r := submit(t, m, `{"mode": "parallel", "duration": "90s", "lanes": [
		{"name": "throttled", "workload": {"kind": "spin", "threads": 2, "seconds": 8},
		 "resources": {"requests": {"cpu": "250m", "memory": "32Mi"}, "limits": {"cpu": "500m", "memory": "64Mi"}}}]}`)
	v := enginetest.WaitDone(t, r, 4*time.Minute)
	if v.State != runner.StateDone {
		t.Fatalf("run %s: %s", v.State, v.Error)
	}
	l := v.Lanes[0]
	t.Logf("run on %s: lane %s, exit %s, %.2f cores, throttled %.2f s, stats from %s", v.Host, l.Name, exitText(l.ExitCode), l.MeasuredCores, l.ThrottledSeconds, l.StatsSource)
	if !strings.Contains(v.Host, "cgroup v2") || !strings.Contains(v.Host, kubetest.Node()) {
		t.Errorf("the run's host %q, want node %s on cgroup v2", v.Host, kubetest.Node())
	}
	if l.StatsSource != engine.StatsSampler {
		t.Errorf("stats from %q, want the node's sampler", l.StatsSource)
	}
	checkKernel(t, l)
	want := map[string]string{"cpu.max": "50000 100000", "memory.max": "67108864", "cpu.weight": ""}
	for _, f := range l.Kernel.Files {
		t.Logf("kernel: %s = %s (want %s, %s)", f.File, f.Got, f.Want, f.Formula)
		if w, ok := want[f.File]; ok && (w == "" || f.Got == w) {
			delete(want, f.File)
		}
	}
	if len(want) != 0 {
		t.Errorf("files not read back as written: %v", want)
	}
	var cpu, mem int
	var most float64
	for _, s := range enginetest.Samples(t, r) {
		if s.CPUPressure != nil {
			cpu++
			most = max(most, *s.CPUPressure)
		}
		if s.MemPressure != nil {
			mem++
		}
	}
	if cpu == 0 || mem == 0 || most <= 0 {
		t.Errorf("pressure in %d and %d samples, at most %.0f ms/s of CPU stall; want PSI read for a pod held to half its demand", cpu, mem, most)
	}
	enginetest.Figure(t, "k8s pod on the v2 node (2 threads at limits.cpu 500m)", "%.2f cores, CPU pressure up to %.0f ms/s", l.MeasuredCores, most)
	if s := v.Start; s != nil {
		enginetest.Figure(t, "k8s pod start, "+kubetest.Node(), "the pod started over %.0f ms", s.StartsMs)
	}
	if n := leftPods(t, cs, v.ID); n != 0 {
		t.Errorf("%d pods of the run left", n)
	}
}
