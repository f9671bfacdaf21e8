package models

import (
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/workload/wire"
)

func report(runtime string, gc string, figs ...any) wire.RuntimeReport {
	r := wire.RuntimeReport{Runtime: runtime, Version: "1", GC: gc}
	for i := 0; i < len(figs); i += 2 {
		r.Figures = append(r.Figures, wire.RuntimeFigure{Name: figs[i].(string), Value: float64(figs[i+1].(int))})
	}
	return r
}

func TestRuntimeRules(t *testing.T) {
	h := RuntimeHost{NCPU: 2, MemTotal: 24 << 30}
	half := specs.Resources{NanoCPUs: 5e8, Memory: 512 << 20}
	cells := runtimeCells(0, []wire.RuntimeReport{
		report("go", "", "gomaxprocs", 2, "num_cpu", 2),
		report("java", "Serial", "available_processors", 1, "fork_join_parallelism", 1, "gc_threads", 0, "max_heap_bytes", 134217728),
		report("node", "", "available_parallelism", 2, "cpus_length", 2, "heap_limit_bytes", 271581184),
		report("python", "", "cpu_count", 2, "sched_getaffinity", 2),
	}, half, h)
	for _, c := range cells {
		if c.Figure == "process_cpu_count" {
			if c.Judged || !c.Absent || !strings.Contains(c.Why, "3.13") {
				t.Errorf("python's process_cpu_count: %+v", c)
			}
			continue
		}
		if !c.Judged || !c.Agrees {
			t.Errorf("%s %s: measured %v %q, predicted %v %q (+%v)", c.Runtime, c.Figure, c.Measured, c.MeasuredText, c.Predicted, c.PredictedText, c.Slack)
		}
	}
	if len(cells) != 13 {
		t.Errorf("%d cells, want 13", len(cells))
	}
	// A cpuset of one CPU and 2 GiB: every affinity-reading figure is 1;
	// os.cpus() and os.cpu_count() still say 2; the JVM is not server-class
	// on one processor, and V8 takes half of 2 GiB.
	one := specs.Resources{CpusetCpus: "0", Memory: 2 << 30}
	want := map[string]float64{"go/gomaxprocs": 1, "go/num_cpu": 1, "java/available_processors": 1, "node/available_parallelism": 1,
		"node/cpus_length": 2, "node/heap_limit_bytes": 1 << 30, "python/cpu_count": 2, "python/sched_getaffinity": 1, "java/max_heap_bytes": 512 << 20}
	for _, rt := range wire.Runtimes {
		for _, p := range predictRuntime(rt, one, h) {
			if w, ok := want[rt+"/"+p.name]; ok && p.value != w {
				t.Errorf("%s %s under cpuset 0, 2g: predicted %v, want %v", rt, p.name, p.value, w)
			}
			if rt == "java" && p.name == "gc" && p.text != "Serial" {
				t.Errorf("java's collector on one processor: %q", p.text)
			}
		}
	}
}

func TestRuntimesVerdictNamesTheCellsThatDiffer(t *testing.T) {
	h := RuntimeHost{NCPU: 2, MemTotal: 24 << 30}
	plan := specs.Plan{Lanes: []specs.PlannedLane{{Name: "cpus 0.5"}, {Name: "silent"}}}
	lanes := []RuntimeLane{
		{Reports: []wire.RuntimeReport{report("python", "", "cpu_count", 1, "sched_getaffinity", 2)}, Limits: specs.Resources{NanoCPUs: 5e8}},
		{Why: "no round of reports"},
	}
	v, cells := JudgeRuntimes(specs.VerdictSpec{Metric: specs.MetricRuntimes}, plan, lanes, h)
	if !v.Judged || v.Pass || len(cells) != 3 {
		t.Fatalf("verdict %+v, %d cells", v, len(cells))
	}
	for _, want := range []string{"cpus 0.5 · python cpu_count: 1, the rule says 2", "silent: no round of reports"} {
		if !strings.Contains(v.Explanation, want) {
			t.Errorf("explanation %q lacks %q", v.Explanation, want)
		}
	}
	if strings.Contains(v.Explanation, "process_cpu_count") {
		t.Errorf("a figure the version lacks is counted against it: %q", v.Explanation)
	}
}

// TestNodeSeesNoMemoryLimitOnV2: Node.js 18's libuv reads v1's
// memory.limit_in_bytes only, so on cgroup v2 V8 sizes its heap from the
// host's memory whatever --memory says (measured in the v2 VM: 2008 MiB
// under --memory 256m on a 4 GiB host).
func TestNodeSeesNoMemoryLimitOnV2(t *testing.T) {
	small := specs.Resources{Memory: 256 << 20}
	for _, c := range []struct {
		v2   bool
		want float64
	}{{false, 256 << 20}, {true, 1960 << 20}} {
		h := RuntimeHost{NCPU: 2, MemTotal: 3920 << 20, CgroupV2: c.v2}
		for _, p := range predictRuntime("node", small, h) {
			if p.name == "heap_limit_bytes" && p.value != c.want {
				t.Errorf("cgroup v2 %v: heap %v, want %v", c.v2, p.value, c.want)
			}
		}
	}
}
