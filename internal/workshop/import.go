package workshop

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/experiments/kernelfiles"
	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/kube"
	"github.com/limitlab/limitlab/internal/runner"
)

// Bounds on what an imported file may hold beyond its spec's lanes.
const (
	maxImportText    = 2000 // an error, a result, an explanation
	maxImportShort   = 200  // a host, a note, a label, a warning
	maxImportChanges = 1000
	maxImportEvents  = 100
	maxImportBounds  = 2 * specs.MaxLanes
)

// cleanView makes an imported view this server's: the new id, the
// validated spec's names and lanes, times no later than now, and commands
// rebuilt; it refuses one that names lanes, states or limits that cannot
// be.
func cleanView(v *runner.RunView, spec specs.Spec, plan specs.Plan, id string, now time.Time) error {
	if len(v.Lanes) != len(plan.Lanes) {
		return fmt.Errorf("%d lanes, but its spec has %d", len(v.Lanes), len(plan.Lanes))
	}
	v.ID, v.Imported, v.QueuePosition = id, true, 0
	v.Spec, v.Name, v.Mode, v.Duration = spec, plan.Name, plan.Mode, plan.Duration.Seconds()
	if v.Lab != "" {
		if _, ok := experiments.LabByID(v.Lab); !ok {
			v.Lab = "" // a lab this server does not have: a custom run here
		}
	}
	if !v.State.Ended() {
		v.State, v.Error = runner.StateInterrupted, "exported before it ended"
	}
	if !knownState(v.State) {
		return fmt.Errorf("state %q", v.State)
	}
	v.Ended = true
	for _, t := range []*time.Time{&v.CreatedAt, &v.StartedAt, &v.EndedAt} {
		if t.After(now) {
			*t = now
		}
	}
	v.Error, v.Host, v.StatsNote = clip(v.Error, maxImportText), clip(v.Host, maxImportShort), clip(v.StatsNote, maxImportShort)
	if !engine.ValidEngineName(v.Engine) {
		v.Engine = "" // the engine it ran on elsewhere, if it names one
	}
	v.PhaseBounds = plan.PhaseBounds()
	var missing []engine.Missing
	for _, m := range v.Missing {
		if len(missing) < 8 && len(m.Signal) <= 32 {
			missing = append(missing, engine.Missing{Signal: m.Signal, Why: clip(m.Why, maxImportShort)})
		}
	}
	v.Missing = missing
	// A series is this server's own: an imported run stands alone. Its
	// steps are the lab's here, with only where each stood taken from
	// the file.
	v.Series = nil
	steps := runner.StepViews(plan)
	if len(v.Steps) == len(steps) {
		for k, s := range v.Steps {
			if s.State == runner.StepDone {
				steps[k].State = s.State
			}
			if !math.IsNaN(s.Value) && !math.IsInf(s.Value, 0) {
				steps[k].Value = s.Value
			}
			steps[k].Changed, steps[k].Full, steps[k].Holds = s.Changed, s.Full, s.Holds
			steps[k].DoneAt = min(max(s.DoneAt, 0), plan.Duration.Seconds())
		}
		// An imported run has ended: a step not done is unfinished, in
		// this server's words from where it stood (the first not done was
		// active, those after it waiting).
		reached := true
		for k := range steps {
			if steps[k].State != runner.StepDone {
				steps[k].State = runner.StepWaiting
				if reached {
					steps[k].State, reached = runner.StepActive, false
				}
				runner.Unfinish(&steps[k])
			}
		}
	}
	v.Steps = steps
	for i := range v.Lanes {
		if err := cleanLane(&v.Lanes[i], i, plan); err != nil {
			return fmt.Errorf("lane %d: %w", i, err)
		}
	}
	if len(v.Changes) > maxImportChanges || len(v.Events) > maxImportEvents {
		return fmt.Errorf("%d changes and %d events, more than a run makes", len(v.Changes), len(v.Events))
	}
	if err := cleanChanges(v); err != nil {
		return err
	}
	if err := cleanRuntimes(v); err != nil {
		return err
	}
	for k, ev := range v.Events {
		if ev.Lane < 0 || ev.Lane >= len(v.Lanes) || (ev.Kind != engine.EventOOM && ev.Kind != engine.EventDie) {
			return fmt.Errorf("event %d: %q on lane %d, which cannot be", k, ev.Kind, ev.Lane)
		}
	}
	if st := v.Start; st != nil {
		if st.Lanes < 2 || st.Lanes > len(v.Lanes) || !(st.SkewMs >= 0 && st.SkewMs < 1e6) || !(st.StartsMs >= 0 && st.StartsMs < 1e7) {
			return fmt.Errorf("start barrier: %d lanes, %v ms, %v ms, which cannot be", st.Lanes, st.SkewMs, st.StartsMs)
		}
	}
	if vd := v.Verdict; vd != nil {
		if len(vd.Labels) > specs.MaxLanes || len(vd.Predicted) > specs.MaxLanes || len(vd.Measured) > specs.MaxLanes {
			return fmt.Errorf("a verdict of more rows than lanes")
		}
		vd.Labels = clipAll(vd.Labels)
		vd.Metric, vd.Explanation = clip(vd.Metric, maxImportShort), clip(vd.Explanation, maxImportText)
	}
	return nil
}

// cleanChanges checks each of an imported run's live changes against its
// lanes, and writes again the command each shows.
func cleanChanges(v *runner.RunView) error {
	for k := range v.Changes {
		c := &v.Changes[k]
		if c.Lane < 0 || c.Lane >= len(v.Lanes) {
			return fmt.Errorf("change %d names lane %d, but the run has %d lanes", k, c.Lane, len(v.Lanes))
		}
		if err := c.Applied.Check(); err != nil {
			return fmt.Errorf("change %d: %w", k, err)
		}
		if c.Resize != nil || c.Limits.Resources != nil {
			if err := cleanResize(c, v.Lanes[c.Lane], engine.ContainerName(v.ID, c.Lane)); err != nil {
				return fmt.Errorf("change %d: %w", k, err)
			}
			continue
		}
		delta, errs := specs.ResolveChange(c.Applied, c.Limits, specs.Host{DataRootDevice: "/dev/auto"})
		if errs != nil {
			return fmt.Errorf("change %d: %w", k, errs)
		}
		c.DockerUpdate = specs.DockerUpdate(containerOf(v.Lanes[c.Lane]), delta)
		c.Warnings = clipAll(c.Warnings)
	}
	return nil
}

// cleanLane checks lane i of an imported view against its plan and
// rebuilds its command.
func cleanLane(l *runner.LaneResult, i int, plan specs.Plan) error {
	pl := plan.Lanes[i]
	l.Index, l.Name, l.Workload, l.Unit = i, pl.Name, pl.Workload, pl.Workload.Unit()
	if l.Requested.Check() != nil {
		l.Requested = pl.Resources // as resolved here, not on the run's own host
	}
	l.Modelled = models.Modelled(pl.Workload)
	switch l.State {
	case runner.LanePending, runner.LaneRunning:
		l.State, _ = l.State.To(runner.LaneInterrupted)
	case runner.LaneExited, runner.LaneSkipped, runner.LaneInterrupted:
	default:
		return fmt.Errorf("state %q", l.State)
	}
	if l.Container != "" {
		if _, err := hex.DecodeString(l.Container); err != nil || len(l.Container) != 12 {
			return fmt.Errorf("container %q", l.Container)
		}
	}
	applied := pl.Resources
	if l.Applied != nil {
		if err := l.Applied.Check(); err != nil {
			return fmt.Errorf("applied limits: %w", err)
		}
		applied = *l.Applied
	}
	network := ""
	if pl.Target >= 0 {
		network = "container:" + engine.ContainerName("imported", pl.Target)
	}
	l.DockerRun = specs.DockerRun(engine.RepoOf(pl.Workload), pl.Workload, applied, network)
	l.Kernel = cleanKernel(l.Kernel, applied, pl.Pod)
	l.Pod = pl.Pod
	if l.PodYAML != "" && pl.Pod != nil {
		// The pod as this server would build it from the validated lane:
		// nothing of the file's text is kept.
		l.PodYAML = kube.YAML(kube.PodSpec(engine.NewLane{RunID: "imported", Index: i, Lane: pl, Image: engine.OCIRepo}, kube.Placement{}, pl.Workload.Args()))
	} else {
		l.PodYAML = ""
	}
	l.Warnings = clipAll(l.Warnings)
	l.Result, l.Error, l.StatsSource = clip(l.Result, maxImportText), clip(l.Error, maxImportText), clip(l.StatsSource, 16)
	if len(l.Phases) > maxImportBounds+1 {
		return fmt.Errorf("%d phases", len(l.Phases))
	}
	for k := range l.Phases {
		l.Phases[k].Name = clip(l.Phases[k].Name, 32)
	}
	return nil
}

func knownState(s runner.State) bool {
	switch s {
	case runner.StateDone, runner.StateFailed, runner.StateStopped, runner.StateRefused, runner.StateInterrupted:
		return true
	}
	return false
}

func containerOf(l runner.LaneResult) string {
	if l.Container != "" {
		return l.Container
	}
	return "<container>"
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func clipAll(ss []string) []string {
	if len(ss) > 10 {
		ss = ss[:10]
	}
	for i := range ss {
		ss[i] = clip(ss[i], maxImportShort)
	}
	return ss
}

// cleanKernel rebuilds an imported lane's kernel view from its validated
// limits: the files and wanted values are this server's, and only what
// was read back comes from the file, as short printable text, judged anew.
func cleanKernel(k *engine.KernelView, applied specs.Resources, pod *specs.Pod) *engine.KernelView {
	if k == nil || len(k.Files) > 64 {
		return nil
	}
	v2 := k.Cgroup == "2"
	// The device numbers the run's host named its IO limits' devices by,
	// where well formed.
	devs := map[string]string{}
	for _, f := range k.Files {
		path, _, _ := strings.Cut(f.Value, ":")
		if num, _, _ := strings.Cut(f.Want, " "); deviceNumber.MatchString(num) && strings.HasPrefix(path, "/dev/") {
			devs[path] = num
		}
	}
	out := &engine.KernelView{Cgroup: "1", OtherCgroup: "2", Other: kernelfiles.LaneKernelFiles(applied, pod, !v2, devs), Note: clip(k.Note, maxImportShort)}
	if v2 {
		out.Cgroup, out.OtherCgroup = "2", "1"
	}
	if cgroupPath.MatchString(k.Path) {
		out.Path = k.Path
	}
	for _, f := range kernelfiles.LaneKernelFiles(applied, pod, v2, devs) {
		r := engine.KernelReading{KernelFile: f}
		for _, in := range k.Files {
			if in.Flag == f.Flag && in.File == f.File && in.Present {
				r.Present, r.Got = true, printable(clip(in.Got, 512))
				r.Holds = f.Holds(r.Got)
			}
		}
		out.Files = append(out.Files, r)
	}
	return out
}

var (
	deviceNumber = regexp.MustCompile(`^[0-9]{1,4}:[0-9]{1,7}$`)
	// cgroupPath is a cgroup as the kernel names one: /kubepods/…, /docker/….
	cgroupPath = regexp.MustCompile(`^/[A-Za-z0-9._:@/-]{0,255}$`)
)

// printable keeps a cgroup file's text: printable ASCII and newlines.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r >= ' ' && r <= '~' {
			return r
		}
		return -1
	}, s)
}

// finite says whether every x is a number: neither NaN nor infinite.
func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// cleanResize checks a pod lane's resize as a file records it: on a pod
// lane, asked in Kubernetes' words or Docker flags a resize takes, with
// quantities that parse, a state kubelet reports and a QoS class; the
// kubectl command shown is made anew from what was asked, for the pod the
// server names pod.
func cleanResize(c *runner.ChangeRecord, l runner.LaneResult, pod string) error {
	rz := c.Resize
	if rz == nil || l.Pod == nil {
		return errors.New("a resize of a lane that is not a pod, or one without its record")
	}
	if c.Limits.Resources == nil && c.Limits.CPUs == "" && c.Limits.CPUShares == "" && c.Limits.Memory == "" {
		return errors.New("a resize that asked for nothing")
	}
	if r := c.Limits.Resources; r != nil {
		if _, errs := specs.ResolvePod(*r, specs.Host{}); errs != nil {
			return errs
		}
	}
	asked, errs := specs.ResolvePod(rz.Requested, specs.Host{})
	if errs != nil {
		return errs
	}
	if _, errs := specs.ResolvePod(rz.Applied, specs.Host{}); errs != nil {
		return errs
	}
	switch rz.State {
	case engine.ResizeDone, engine.ResizeInProgress, engine.ResizeDeferred:
	default:
		return fmt.Errorf("a resize in state %q, which a recorded change cannot be", rz.State)
	}
	switch rz.QoS {
	case specs.QoSGuaranteed, specs.QoSBurstable, specs.QoSBestEffort:
	default:
		return fmt.Errorf("a QoS class %q", rz.QoS)
	}
	if rz.Restarts < 0 {
		return fmt.Errorf("%d restarts", rz.Restarts)
	}
	rz.Message = clip(rz.Message, maxImportText)
	rz.Command = specs.ResizeCommand(pod, specs.PodContainer, asked)
	c.DockerUpdate, c.Warnings = "", clipAll(c.Warnings)
	return nil
}
