package models

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/workload/wire"
)

// RuntimeHost is what the runtimes' rules read of the host: its online
// CPUs, its memory in bytes, and whether its cgroups are v2.
type RuntimeHost struct {
	NCPU     int
	MemTotal int64
	CgroupV2 bool
}

// RuntimeCell is one figure of one runtime in one lane: what its rule
// predicts, what it reported, and whether they agree. A cell whose rule
// gives a range (a heap rounded up to its alignment) agrees from
// Predicted to Predicted+Slack.
type RuntimeCell struct {
	Lane    int    `json:"lane"`
	Runtime string `json:"runtime"`
	Version string `json:"version,omitempty"`
	Figure  string `json:"figure"`
	// Text figures (the JVM's collector) are compared as text.
	Predicted     float64 `json:"predicted"`
	Slack         float64 `json:"slack,omitempty"`
	PredictedText string  `json:"predicted_text,omitempty"`
	Measured      float64 `json:"measured"`
	MeasuredText  string  `json:"measured_text,omitempty"`
	// Rule is the runtime's rule, naming the version it holds for.
	Rule string `json:"rule"`
	// Judged is false when the cell cannot be compared; Why says why.
	// Absent says the runtime's version has no such figure, which is no
	// failure of the run.
	Judged bool   `json:"judged"`
	Agrees bool   `json:"agrees"`
	Absent bool   `json:"absent,omitempty"`
	Why    string `json:"why,omitempty"`
}

// runtimeLimits are the limits a runtime can see: the CPUs it may run on,
// its CPU quota in cores (0: none) and its memory limit (0: none).
type runtimeLimits struct {
	cpus   int
	quota  float64
	memory int64
}

func limitsOf(r specs.Resources, h RuntimeHost) runtimeLimits {
	l := runtimeLimits{cpus: h.NCPU, quota: r.CPULimit(), memory: r.Memory}
	if set, err := specs.ParseCPUSet(r.CpusetCpus); err == nil && len(set) > 0 {
		l.cpus = len(set)
	}
	return l
}

// seenMemory is the memory a runtime sizes itself from: the cgroup's
// limit when there is one below the host's memory, else the host's.
func (l runtimeLimits) seenMemory(h RuntimeHost) int64 {
	if l.memory > 0 && (h.MemTotal == 0 || l.memory < h.MemTotal) {
		return l.memory
	}
	return h.MemTotal
}

const mib = 1 << 20

// predictedFigure is a rule's prediction of one figure.
type predictedFigure struct {
	name  string
	value float64
	slack float64
	text  string // a text figure's prediction
	rule  string
}

// predictRuntime is what runtime's documented rule predicts for each of
// its figures under resources r on host h.
func predictRuntime(runtime string, r specs.Resources, h RuntimeHost) []predictedFigure {
	l := limitsOf(r, h)
	switch runtime {
	case "go":
		procs := l.cpus
		if l.quota > 0 {
			procs = max(min(int(math.Ceil(l.quota)), l.cpus), min(2, l.cpus))
		}
		return []predictedFigure{
			{name: "gomaxprocs", value: float64(procs), rule: "Go 1.25+: the CPUs it may run on, capped at the CPU quota rounded up, but not below 2 where 2 CPUs are there; checked again about once a second"},
			{name: "num_cpu", value: float64(l.cpus), rule: "Go: the CPUs it may run on (its affinity), read once as it starts; the quota is not counted"},
		}
	case "java":
		return predictJava(l, h)
	case "node":
		// libuv 1.44 reads a memory limit on cgroup v1 only.
		mem, memRule := l.seenMemory(h), "Node.js 18 (libuv 1.44) gives V8 the cgroup's memory limit when it is below the host's"
		if h.CgroupV2 {
			mem, memRule = h.MemTotal, "Node.js 18 (libuv 1.44) reads no memory limit on cgroup v2 (only v1's memory.limit_in_bytes) and gives V8 the host's memory"
		}
		// V8 takes a quarter of the memory, doubled for 8-byte pointers.
		old := float64(min(max(mem/2, 256*mib), 4096*mib))
		return []predictedFigure{
			{name: "available_parallelism", value: float64(l.cpus), rule: "Node.js 18 (libuv 1.44): the CPUs it may run on; the CPU quota is not counted"},
			{name: "cpus_length", value: float64(h.NCPU), rule: "Node.js: os.cpus() lists the host's online CPUs, whatever the cpuset or quota"},
			{name: "heap_limit_bytes", value: old, slack: 64 * mib,
				rule: memRule + "; V8's old space is a quarter of that doubled for 64-bit pointers, from 256 MiB to 4 GiB, and its young generation adds up to 48 MiB more, rounded to its pages"},
		}
	case "python":
		return []predictedFigure{
			{name: "cpu_count", value: float64(h.NCPU), rule: "Python 3.11: os.cpu_count() is the host's online CPUs, blind to cpusets and quotas"},
			{name: "sched_getaffinity", value: float64(l.cpus), rule: "Python: os.sched_getaffinity(0) is the CPUs it may run on; the quota is not counted"},
		}
	}
	return nil
}

// predictJava is the JDK 17's container ergonomics.
func predictJava(l runtimeLimits, h RuntimeHost) []predictedFigure {
	procs := l.cpus
	if l.quota > 0 {
		procs = min(procs, max(1, int(math.Ceil(l.quota))))
	}
	mem := l.seenMemory(h)
	// A server-class machine has 2 CPUs and 2 GiB less 256 MiB of slack.
	server := procs >= 2 && mem >= 1792*mib
	gc, threads := "Serial", 0
	if server {
		gc, threads = "G1", procs
		if procs > 8 {
			threads = 8 + (procs-8)*5/8
		}
	}
	// MaxHeapSize's default, 96 MiB scaled for 64-bit words.
	const defaultMax = 96 * mib * 13 / 10
	heap := float64(mem) / 4
	if float64(mem)/2 < defaultMax {
		heap = float64(mem) / 2
	} else {
		heap = math.Max(heap, defaultMax)
	}
	return []predictedFigure{
		{name: "available_processors", value: float64(procs), rule: "JDK 17: the CPUs it may run on, capped at the CPU quota rounded up (CPU shares are not counted since 17.0.5)"},
		{name: "gc", text: gc, rule: "JDK 17: G1 on a server-class machine (at least 2 processors and 1792 MiB), else the Serial collector"},
		{name: "gc_threads", value: float64(threads), rule: "JDK 17: G1 takes one GC thread per processor up to 8, then 5 in 8 more; the Serial collector leaves ParallelGCThreads at 0"},
		{name: "fork_join_parallelism", value: float64(max(1, procs-1)), rule: "JDK: the common ForkJoin pool's parallelism is the processors less one, at least 1"},
		{name: "max_heap_bytes", value: heap, slack: 32 * mib,
			rule: "JDK 17: MaxRAMPercentage (25%) of the memory it sees, the cgroup's limit if lower, and at least 124.8 MiB; MinRAMPercentage (50%) when half of it is below that; rounded up to the heap's alignment"},
	}
}

// runtimeCells compares a lane's reports with its runtimes' rules under
// the limits r in force when the round began.
func runtimeCells(lane int, reports []wire.RuntimeReport, r specs.Resources, h RuntimeHost) []RuntimeCell {
	var cells []RuntimeCell
	for _, rep := range reports {
		for _, p := range predictRuntime(rep.Runtime, r, h) {
			c := RuntimeCell{Lane: lane, Runtime: rep.Runtime, Version: rep.Version, Figure: p.name, Predicted: p.value,
				Slack: p.slack, PredictedText: p.text, Rule: p.rule}
			var ok bool
			switch {
			case rep.Error != "":
				c.Why = "its probe failed: " + rep.Error
			case p.text != "":
				c.MeasuredText, ok = rep.GC, rep.GC != ""
				c.Judged, c.Agrees = ok, c.MeasuredText == p.text
			default:
				c.Measured, ok = rep.Figure(p.name)
				c.Judged = ok
				c.Agrees = ok && c.Measured >= p.value-0.5 && c.Measured <= p.value+p.slack+0.5
			}
			if !ok && c.Why == "" {
				c.Why = "not reported"
			}
			cells = append(cells, c)
		}
		if rep.Runtime == "python" && rep.Error == "" {
			if _, ok := rep.Figure("process_cpu_count"); !ok {
				cells = append(cells, RuntimeCell{Lane: lane, Runtime: "python", Version: rep.Version, Figure: "process_cpu_count", Absent: true,
					Rule: "Python 3.13+: os.process_cpu_count() is the CPUs it may run on", Why: "not in Python " + rep.Version + ": it came in 3.13"})
			}
		}
	}
	return cells
}

// RuntimeLane is one lane's runtimes as the runner measured them: the
// reports of its last round, and the limits in force when that round
// began. Why, instead, says why the lane cannot be judged.
type RuntimeLane struct {
	Reports []wire.RuntimeReport
	Limits  specs.Resources
	Why     string
}

// JudgeRuntimes gives the verdict of a runtimes lab: every cell of every
// lane agrees with its runtime's rule, or the verdict names the cells
// that do not.
func JudgeRuntimes(spec specs.VerdictSpec, plan specs.Plan, lanes []RuntimeLane, h RuntimeHost) (Verdict, []RuntimeCell) {
	v := Verdict{Metric: spec.Metric, Judged: true}
	var cells []RuntimeCell
	var differ, unjudged []string
	judged := 0
	for i, l := range lanes {
		name := plan.Lanes[i].Name
		if l.Why != "" {
			unjudged = append(unjudged, fmt.Sprintf("%s: %s", name, l.Why))
			continue
		}
		for _, c := range runtimeCells(i, l.Reports, l.Limits, h) {
			cells = append(cells, c)
			label := fmt.Sprintf("%s · %s %s", name, c.Runtime, c.Figure)
			switch {
			case c.Absent:
			case !c.Judged:
				unjudged = append(unjudged, label+": "+c.Why)
			case !c.Agrees:
				judged++
				differ = append(differ, fmt.Sprintf("%s: %s, the rule says %s", label, c.MeasuredString(), c.Prediction()))
			default:
				judged++
			}
		}
	}
	switch {
	case len(cells) == 0:
		v.Judged = false
		v.Explanation = "No runtime reported: " + strings.Join(unjudged, "; ")
	case len(differ) > 0:
		v.Explanation = fmt.Sprintf("%d of %d figures differ from their runtime's rule: %s.", len(differ), judged, strings.Join(differ, "; "))
	default:
		v.Pass = true
		v.Explanation = fmt.Sprintf("Every figure agrees with its runtime's rule (%d across %d lanes).", judged, len(lanes))
	}
	if len(unjudged) > 0 && len(cells) > 0 {
		v.Pass = false
		v.Explanation += " Not judged: " + strings.Join(unjudged, "; ") + "."
	}
	return v, cells
}

// MeasuredString is the cell's measured figure as people read it.
func (c RuntimeCell) MeasuredString() string {
	if c.PredictedText != "" {
		return c.MeasuredText
	}
	return FormatFigure(c.Figure, c.Measured)
}

// Prediction is the rule's prediction as people read it: a text, a
// figure, or the range a figure may take.
func (c RuntimeCell) Prediction() string {
	if c.PredictedText != "" {
		return c.PredictedText
	}
	if c.Slack > 0 {
		return FormatFigure(c.Figure, c.Predicted) + " to " + FormatFigure(c.Figure, c.Predicted+c.Slack)
	}
	return FormatFigure(c.Figure, c.Predicted)
}

// FormatFigure writes a runtime's figure as people read it: bytes in MiB.
func FormatFigure(name string, v float64) string {
	if strings.HasSuffix(name, "_bytes") {
		return fmt.Sprintf("%.0f MiB", v/mib)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
