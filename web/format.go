package web

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	units "github.com/docker/go-units"
	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workload/wire"
)

// limitsText writes a lane's limits in the CLI's flag names, compactly.
// resizeText is a pod's resize as kubelet left it: the resources its
// status reports applied and its QoS class, and, unless it is done,
// kubelet's state and message.
func resizeText(r runner.ResizeRecord) string {
	s := fmt.Sprintf("requests %s, limits %s (%s)", r.Applied.Requests, r.Applied.Limits, r.QoS)
	if r.State != engine.ResizeDone {
		s = fmt.Sprintf("%s: %s; still %s", resizeStateText(r.State), r.Message, s)
	}
	if r.SettledAt > 0 {
		s += fmt.Sprintf("; kubelet settled it at %.1f s", r.SettledAt)
	}
	if r.Restarts > 0 {
		s += fmt.Sprintf("; the container restarted %d times", r.Restarts)
	}
	return s
}

// resizeStateText names kubelet's state of a resize as its condition
// does.
func resizeStateText(state string) string {
	switch state {
	case engine.ResizeInProgress:
		return "PodResizeInProgress"
	case engine.ResizeDeferred, engine.ResizeInfeasible:
		return "PodResizePending (" + state + ")"
	}
	return state
}

// gomaxprocsText is a Go service's GOMAXPROCS as it last reported it, and
// whether Go's floor of 2 holds it above the lane's CPU limit: since Go
// 1.25 a runtime left to choose follows the limit, rounded up, but never
// goes below 2 unless fewer CPUs are available.
func gomaxprocsText(l runner.LaneResult) string {
	s := "GOMAXPROCS " + strconv.Itoa(l.GOMAXPROCS)
	if l.Workload.GOMAXPROCS == "auto" && l.GOMAXPROCS == 2 && l.CPULimit > 0 && l.CPULimit < 1.5 {
		s += fmt.Sprintf(": Go's floor of 2 holds it above the lane's CPU limit of %.2g", l.CPULimit)
	}
	return s
}

func limitsText(r specs.Resources) string {
	var parts []string
	for _, f := range r.Flags() {
		parts = append(parts, f.Name+" "+f.Value)
	}
	if r.CPUBurstUs > 0 {
		parts = append(parts, "cpu_burst "+(time.Duration(r.CPUBurstUs)*time.Microsecond).String())
	}
	if r.MemoryHigh > 0 {
		parts = append(parts, "memory_high "+units.BytesSize(float64(r.MemoryHigh)))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " · ")
}

// laneLimits shows what the engine applied, or what was asked for before
// the container exists.
func laneLimits(l runner.LaneResult) string {
	if l.PodYAML != "" && l.Pod != nil {
		return l.Pod.Text()
	}
	if l.Applied != nil {
		return limitsText(*l.Applied)
	}
	return limitsText(l.Requested) + " (requested)"
}

func workloadText(w specs.Workload) string {
	args := w.Args()
	if w.Kind == specs.KindImage {
		args = append([]string{w.Image}, args...)
	}
	return strings.Join(args, " ")
}

func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func exitText(l runner.LaneResult) string {
	if l.ExitCode == nil {
		return "—"
	}
	return strconv.Itoa(*l.ExitCode)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func ratioText(l runner.LaneResult) string {
	if l.Ratio == 0 {
		return "—"
	}
	return f2(l.Ratio) + "×"
}

func throttledText(l runner.LaneResult) string {
	if l.Periods == 0 {
		return "—"
	}
	return strconv.FormatUint(l.ThrottledPeriods, 10) + " / " + strconv.FormatUint(l.Periods, 10)
}

func gib(n int64) string { return f1(float64(n)/(1<<30)) + " GiB" }

func metricText(m string) string {
	switch m {
	case specs.MetricWallTime:
		return "wall time"
	case specs.MetricIOLimit:
		return "rate"
	case specs.MetricPhaseRecovery:
		return "rate ÷ phase 1"
	case specs.MetricIOShare:
		return "IO bandwidth"
	case specs.MetricThrottling:
		return "share of time throttled"
	case specs.MetricBurst:
		return "throttling and p99"
	}
	return "CPU use"
}

// verdictLabel names a verdict's row: its own label, or the lane's name
// with the ratio to the first lane.
func verdictLabel(v runner.RunView, i int) string {
	if i < len(v.Verdict.Labels) {
		return v.Verdict.Labels[i]
	}
	if i < len(v.Lanes) {
		return v.Lanes[i].Name + " (÷ lane 1)"
	}
	return ""
}

func eventText(e runner.EventRecord) string {
	switch {
	case e.Kind == "oom":
		return "killed by the kernel's OOM killer"
	case e.ExitCode != nil:
		return "exited with code " + strconv.Itoa(*e.ExitCode)
	}
	return e.Kind
}

func percentText(x float64) string { return strconv.FormatFloat(100*x, 'f', -1, 64) + "%" }

func optF2(v *float64) string {
	if v == nil {
		return "—"
	}
	return f2(*v)
}

// deviationText is how far a measured ratio is from its prediction:
// relatively, or, against a prediction of none or next to none (a
// starved lane, a service never throttled), absolutely, since a share of
// nothing says nothing.
func deviationText(measured, predicted float64) string {
	if math.Abs(predicted) < models.StarvedRatio {
		return strconv.FormatFloat(measured-predicted, 'f', 2, 64) + " (absolute)"
	}
	return strconv.FormatFloat(100*(measured/predicted-1), 'f', 1, 64) + "%"
}

// wallDeviation is how far a lane's wall time is from the model's.
func wallDeviation(l runner.LaneResult) string {
	if l.PredictedWallSeconds == nil || *l.PredictedWallSeconds == 0 || l.WallSeconds == 0 {
		return "—"
	}
	return strconv.FormatFloat(100*(l.WallSeconds / *l.PredictedWallSeconds - 1), 'f', 1, 64) + "%"
}

func hasLoad(v runner.RunView) bool {
	for _, l := range v.Lanes {
		if l.Workload.Kind == specs.KindLoad {
			return true
		}
	}
	return false
}

// runMeta is a run's mode, sampling interval, date and host in a line.
func runMeta(v runner.RunView) string {
	s := string(v.Mode) + ", every sample " + f3(float64(v.IntervalMs)/1000) + " s, " + v.CreatedAt.Format("2006-01-02 15:04 MST")
	if v.Host != "" {
		s += ", on " + v.Host
	}
	return s
}

// samplingText is how the samples kept to their interval, for a run
// sampled faster than the default; the results fragment carries it, so
// the page has it anew as the run goes on.
func samplingText(s *runner.SamplingView) string {
	if s == nil {
		return ""
	}
	return fmt.Sprintf("Sampled every %g ms: the interval was off by %.1f ms at the median and %.1f ms at the 99th percentile (at most %.1f ms) over %d intervals.",
		s.IntervalMs, s.ErrorP50Ms, s.ErrorP99Ms, s.ErrorMaxMs, s.Intervals)
}

// startText says how together a start barrier's lanes began.
func startText(s runner.StartView) string {
	return fmt.Sprintf("Start barrier: the %d lanes began their work within %.1f ms of each other (their workloads' own clocks); the engine had started them over %.0f ms.", s.Lanes, s.SkewMs, s.StartsMs)
}

// hasPods says a run's lanes ran as pods.
func hasPods(v runner.RunView) bool {
	for _, l := range v.Lanes {
		if l.PodYAML != "" {
			return true
		}
	}
	return false
}

func hasKernel(v runner.RunView) bool {
	for _, l := range v.Lanes {
		if l.Kernel != nil && len(l.Kernel.Files) > 0 {
			return true
		}
	}
	return false
}

// holdsText says whether a read-back file shows what its flag asked.
func holdsText(f engine.KernelReading) string {
	switch {
	case f.Holds:
		return "✓"
	case !f.Present:
		return "" // not offered here (for one of several files: another holds it)
	case f.Formula != "":
		return "not this runtime's formula"
	}
	return "differs"
}

// otherFiles is how the other cgroup version writes a flag:
// "cpu.cfs_quota_us=50000, cpu.cfs_period_us=100000".
func otherFiles(k *engine.KernelView, flag string) string {
	var parts []string
	for _, o := range k.Other {
		if o.Flag == flag {
			parts = append(parts, o.File+" = "+o.Want)
		}
	}
	sep := ", "
	for _, o := range k.Other {
		if o.Flag == flag && o.Either {
			sep = " or "
		}
	}
	return strings.Join(parts, sep)
}

// f3 is a figure to three significant digits.
func f3(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }

// values are a lane's figures run by run.
func values(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = f3(x)
	}
	return strings.Join(parts, ", ")
}

// unsupportedText lists the limits an engine cannot apply, by name.
func unsupportedText(m map[string]string) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// engineName is the pool's engine a run ran on, or "the one engine".
func engineName(v runner.RunView) string {
	if v.Engine == "" {
		return "the server's one engine"
	}
	return v.Engine
}

// noisy says whether the host's own load around a run was enough to
// mention as a warning: the quiet check found the host busy, or a quarter
// of a CPU of other work on average while it ran.
func noisy(n *runner.HostNoise) bool {
	return n.Measured && ((n.Quiet != nil && n.Quiet.Busy) || n.ForeignCores+n.StealCores >= 0.25)
}

// noiseText is the results' line on the host's own load: the quiet check
// before the run, foreign load and steal while it ran, and each lane's
// wait for a CPU.
func noiseText(v runner.RunView) string {
	n := v.Noise
	if !n.Measured {
		return "Host load: " + n.Note + "."
	}
	var b strings.Builder
	b.WriteString("Host load: ")
	if q := n.Quiet; q != nil {
		state := "quiet"
		if q.Busy {
			state = "busy"
		}
		fmt.Fprintf(&b, "%s before the run (%.2f cores of other work, %.2f stolen, over a second); ", state, q.ForeignCores, q.StealCores)
	}
	fmt.Fprintf(&b, "while it ran, %.2f cores of other work than this run, the server and the engine on average (%.2f at the most), and %.2f stolen by the hypervisor.",
		n.ForeignCores, n.PeakForeign, n.StealCores)
	if len(v.Lanes) > 0 && v.Lanes[0].Pod != nil {
		b.WriteString(" On a Kubernetes node that other work includes the node's control plane and kubelet, which share its CPUs with the pods; the verdict counts it as such.")
	}
	var waits []string
	for _, l := range v.Lanes {
		if l.WaitSeconds != nil {
			waits = append(waits, fmt.Sprintf("%s %.2f s", l.Name, *l.WaitSeconds))
		}
	}
	if len(waits) > 0 {
		b.WriteString(" Time the lanes' threads waited, runnable, for a CPU: " + strings.Join(waits, ", ") + ".")
	}
	return b.String()
}

// p999Text is a load lane's p99.9, or a dash for a record made before it
// was kept.
func p999Text(l *wire.Latency) string {
	if l.Count == 0 {
		return "—"
	}
	return f1(l.P999)
}

// loopText says where a load lane's latencies count from: in an open loop
// from each request's due instant (corrected for coordinated omission,
// with the requests the generator sent late); in a closed loop from when
// it went, whose tail is not corrected.
func loopText(l *wire.Latency) string {
	switch l.Loop {
	case wire.OpenLoop:
		if l.Late > 0 {
			return fmt.Sprintf("each request's due instant (open loop, corrected for coordinated omission); %d of %d sent over 1 ms late", l.Late, l.Count)
		}
		return "each request's due instant (open loop, corrected for coordinated omission)"
	case wire.ClosedLoop:
		return "when each request went (closed loop: a client waits for its answer, so the tail is not corrected for coordinated omission)"
	}
	return "—"
}

// linkErrorText is an error in a lab link, naming its lane by name.
func linkErrorText(lab experiments.Lab, e specs.FieldError) string {
	spec := lab.LabSpec()
	if e.Lane >= 0 && e.Lane < len(spec.Lanes) {
		return "lane " + strconv.Itoa(e.Lane) + " (" + spec.Lanes[e.Lane].Name + "): " + e.Field + ": " + e.Message
	}
	return e.Error()
}

// missingText names the signals a run's samples lack, each reason once:
// "Not in these samples: cpu_pressure, memory_pressure and io_pressure
// (cgroup v1 has no pressure stall information (PSI))".
func missingText(missing []engine.Missing) string {
	var order []string
	by := map[string][]string{}
	for _, m := range missing {
		if _, ok := by[m.Why]; !ok {
			order = append(order, m.Why)
		}
		by[m.Why] = append(by[m.Why], string(m.Signal))
	}
	parts := make([]string, len(order))
	for i, why := range order {
		parts[i] = andList(by[why]) + " (" + why + ")"
	}
	return "Not in these samples: " + strings.Join(parts, "; ") + "."
}

func andList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}
