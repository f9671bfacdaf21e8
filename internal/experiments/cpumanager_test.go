package experiments

import (
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/experiments/kernelfiles"
	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

var staticNode = specs.Host{NCPU: 2, Kubernetes: true, CPUManager: specs.CPUManagerStatic}

// Under the static policy the Guaranteed service of whole CPUs gets CPUs
// of its own and no quota, its load the shared pool beside it; the
// Burstable service, with the same limits.cpu, keeps its quota.
func TestStaticCPUManagerPlacesTheLab(t *testing.T) {
	spec, errs := Parse([]byte(`{"lab": "k8s-static-cpu"}`))
	if errs != nil {
		t.Fatal(errs)
	}
	plan, errs := Validate(spec, staticNode)
	if errs != nil {
		t.Fatal(errs)
	}
	g, load, b := plan.Lanes[0], plan.Lanes[1], plan.Lanes[2]
	if g.Pod.ExclusiveCPUs != 1 || g.Resources.NanoCPUs != 0 || g.Resources.CpusetCpus != "1" {
		t.Errorf("the Guaranteed service: pod %+v, resources %+v; want one CPU of its own and no quota", g.Pod, g.Resources)
	}
	if load.Pod.SharedCPUs != 1 || load.Resources.CpusetCpus != "0" {
		t.Errorf("its load: pod %+v; want the shared pool of one CPU", load.Pod)
	}
	if b.Pod.QoS != specs.QoSBurstable || b.Pod.ExclusiveCPUs != 0 || b.Pod.SharedCPUs != 0 || b.Resources.NanoCPUs != 1e9 || b.Resources.CpusetCpus != "" {
		t.Errorf("the Burstable service: pod %+v, resources %+v; want a quota of one CPU on every CPU", b.Pod, b.Resources)
	}

	files := map[string]kernelfiles.KernelFile{}
	for _, f := range kernelfiles.PodKernelFiles(*g.Pod, false) {
		files[f.File] = f
	}
	if q := files["cpu.cfs_quota_us"]; q.Want != "-1" || !strings.Contains(q.Formula, "static") {
		t.Errorf("the exclusive pod's quota row: %+v", q)
	}
	cs := files["cpuset.cpus"]
	if cs.CPUs != 1 || !cs.Holds("1") || !cs.Holds("0\n") || cs.Holds("0-1") || cs.Holds("") {
		t.Errorf("the exclusive pod's cpuset row: %+v", cs)
	}
	for _, f := range kernelfiles.PodKernelFiles(*b.Pod, false) {
		if f.File == "cpuset.cpus" {
			t.Errorf("a pod beside no exclusive one has a cpuset row: %+v", f)
		}
	}

	v := models.JudgeThrottling(*plan.Verdict, plan, []models.ThrottleOutcome{
		{Completed: true, Wall: 10},
		{Completed: true, Wall: 10},
		{Completed: true, Periods: 100, ThrottledNs: 9e9, Wall: 10},
		{Completed: true, Wall: 10},
	}, 2)
	if !v.Judged || len(v.Predicted) != 2 || v.Predicted[0] != 0 || v.Predicted[1] != 0.5 || !v.Pass {
		t.Errorf("verdict %+v: want 0 predicted for the service of its own CPU, 0.5 for the Burstable one", v)
	}
	if !strings.Contains(v.Labels[0], "GOMAXPROCS 1") || !strings.Contains(v.Labels[1], "GOMAXPROCS 2") {
		t.Errorf("labels %q: Go counts its cpuset", v.Labels)
	}
}

// The lab names the policy it needs, and what the node's probe found.
func TestStaticCPUManagerLabNeedsTheStaticPolicy(t *testing.T) {
	lab, _ := LabByID("k8s-static-cpu")
	none := specs.Host{NCPU: 2, Kubernetes: true, CPUManager: specs.CPUManagerNone, CPUManagerNote: "a Guaranteed probe pod of 1 CPU got cpuset 0-1 and cpu.cfs_quota_us 100000"}
	if shows, why := lab.Shows(none); shows || !strings.Contains(why, "cpuManagerPolicy: static") || !strings.Contains(why, "is none: a Guaranteed probe pod") {
		t.Errorf("on a node without the static policy: shows %v (%s)", shows, why)
	}
	if shows, why := lab.Shows(twoCPUs); shows || !strings.Contains(why, "Kubernetes node only") {
		t.Errorf("on Docker: shows %v (%s)", shows, why)
	}
	spec, _ := Parse([]byte(`{"lab": "k8s-static-cpu"}`))
	if _, errs := Validate(spec, none); len(errs) != 1 || errs[0].Field != "lab" {
		t.Errorf("run on a node without the static policy: %v", errs)
	}
}

// The static policy keeps a CPU in the shared pool: pods asking for every
// CPU of their own at once are refused, naming the last.
func TestStaticCPUManagerKeepsASharedCPU(t *testing.T) {
	spec, errs := Parse([]byte(`{"lanes": [
		{"workload": {"kind": "spin"}, "resources": {"limits": {"cpu": "1", "memory": "64Mi"}}},
		{"workload": {"kind": "spin"}, "resources": {"limits": {"cpu": "1", "memory": "64Mi"}}}]}`))
	if errs != nil {
		t.Fatal(errs)
	}
	_, errs = Validate(spec, staticNode)
	if len(errs) != 1 || errs[0].Lane != 1 || errs[0].Field != "resources.limits.cpu" || !strings.Contains(errs[0].Message, "shared pool") {
		t.Errorf("got %v", errs)
	}
	// Without the static policy they are quotas, and run.
	if _, errs := Validate(spec, specs.Host{NCPU: 2, Kubernetes: true, CPUManager: specs.CPUManagerNone}); errs != nil {
		t.Errorf("without the static policy: %v", errs)
	}
}
