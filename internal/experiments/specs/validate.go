package specs

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/docker/go-units"
)

// MinMemory is the engine's floor for --memory and --memory-reservation
// (linuxMinMemory in moby's daemon/daemon_unix.go).
const MinMemory = 6 * 1024 * 1024

// DefaultPidsLimit applies to every lane that sets none: a fork bomb in a
// workshop must not take the host down.
const DefaultPidsLimit = 512

// MaxPidsLimit bounds what a lane may ask for.
const MaxPidsLimit = 32768

// Host is what validation needs to know of the engine's host.
type Host struct {
	NCPU int
	// DataRootDevice is the disk under the engine's data root, which the
	// device "auto" names ("" when unknown).
	DataRootDevice string
	// DeviceExists checks a device path on the engine's host; nil when the
	// server cannot see it (the engine then checks).
	DeviceExists func(path string) bool
	// Unsupported maps a limit's field name to the reason this host cannot
	// apply it (from the engine's own capability report).
	Unsupported map[string]string
	// MemTotal is the host's memory and DiskFree the free space under the
	// engine's data root, in bytes; zero when unknown. A run's lanes may
	// not ask for more in all (see capRun).
	MemTotal int64
	DiskFree int64
	// Kubernetes says the engine runs each lane as a pod: every lane gets
	// its resources in Kubernetes' words (PlannedLane.Pod).
	Kubernetes bool
	// Images are the facilitator's images this server allows
	// (-allow-image), each with whether it is on this engine. Nil when
	// unknown (a lab file read on its own): images go unchecked then, and
	// are checked against the engine before any run.
	Images map[string]bool
	// NoRuntimes says why the runtimes workload cannot run on this
	// engine (its image is not there); "" when it can, or when nothing is
	// known (a lab file read on its own).
	NoRuntimes string
	// CPUManager is the node's kubelet CPU manager policy, as a probe pod
	// found it ("static", "none"; empty when unknown or not Kubernetes),
	// and CPUManagerNote what the probe saw. Under the static policy a
	// Guaranteed pod of whole CPUs gets CPUs of its own and no quota.
	CPUManager     CPUManagerPolicy
	CPUManagerNote string
	// DefaultMemory is the memory limit the server gives a lane that sets
	// none (none if zero). A Kubernetes lane written as resources with no
	// requests and no limits is a BestEffort pod on purpose, and keeps
	// its class.
	DefaultMemory int64
}

// Resources are a lane's limits resolved to the numbers the Engine API takes
// (the fields of its HostConfig.Resources). Zero means "not set".
type Resources struct {
	NanoCPUs          int64  `json:"nano_cpus,omitempty"`
	CPUShares         int64  `json:"cpu_shares,omitempty"`
	CpusetCpus        string `json:"cpuset_cpus,omitempty"`
	CPUPeriod         int64  `json:"cpu_period,omitempty"`
	CPUQuota          int64  `json:"cpu_quota,omitempty"`
	Memory            int64  `json:"memory,omitempty"`
	MemorySwap        int64  `json:"memory_swap,omitempty"`
	MemoryReservation int64  `json:"memory_reservation,omitempty"`
	PidsLimit         int64  `json:"pids_limit,omitempty"`
	// Block IO throttles and weights, one device each; the path is the
	// resolved device (never "auto").
	ReadBps           DeviceRate `json:"read_bps_device,omitzero"`
	WriteBps          DeviceRate `json:"write_bps_device,omitzero"`
	ReadIOps          DeviceRate `json:"read_iops_device,omitzero"`
	WriteIOps         DeviceRate `json:"write_iops_device,omitzero"`
	BlkioWeight       uint16     `json:"blkio_weight,omitempty"`
	BlkioWeightDevice DeviceRate `json:"blkio_weight_device,omitzero"`
	// CPUBurstUs is the lane's cpu_burst, in microseconds: no engine
	// applies it, the server writes it into the lane's cgroup.
	CPUBurstUs int64 `json:"cpu_burst_us,omitempty"`
	// MemoryHigh is the lane's memory.high in bytes (cgroup v2), which
	// the server writes too.
	MemoryHigh int64 `json:"memory_high,omitempty"`
}

// DeviceRate is a device and a rate (bytes or operations per second) or a
// weight.
type DeviceRate struct {
	Path string `json:"path"`
	Rate uint64 `json:"rate"`
}

// IO says whether any block IO limit is set.
func (r Resources) IO() bool {
	return r.ReadBps.Path != "" || r.WriteBps.Path != "" || r.ReadIOps.Path != "" || r.WriteIOps.Path != "" ||
		r.BlkioWeight > 0 || r.BlkioWeightDevice.Path != ""
}

// CPULimit is the CPU the lane may use, in cores, from --cpus or
// quota/period; 0 means no quota.
func (r Resources) CPULimit() float64 {
	switch {
	case r.NanoCPUs > 0:
		return float64(r.NanoCPUs) / 1e9
	case r.CPUQuota > 0:
		period := r.CPUPeriod
		if period == 0 {
			period = 100000
		}
		return float64(r.CPUQuota) / float64(period)
	}
	return 0
}

// Plan is a validated spec: everything needed to start the containers.
type Plan struct {
	// Groups are the lanes that run together, in order: all of them in a
	// parallel run; in a sequential run each lane alone, except that an
	// http lane runs with the load lanes that target it.
	Groups   [][]int
	Lab      string        // the lab's id, if the spec is a lab's
	Verdict  *VerdictSpec  // how to judge the run; nil: the default
	Steps    []Step        // a guided lab's steps
	Repeat   int           // runs in the series, 1 for one run
	Interval time.Duration // sampling interval; 0: the server's
	Name     string
	Mode     Mode
	Duration time.Duration
	Lanes    []PlannedLane
}

// PlannedLane is a lane with defaults filled in and limits resolved.
type PlannedLane struct {
	Name      string
	Workload  Workload
	Resources Resources
	// Pod is the lane's resources in Kubernetes' words: as written, or
	// translated from its Docker flags on a Kubernetes engine; nil for a
	// lane of Docker flags on a Docker engine.
	Pod *Pod
	// Target is the http lane a load lane loads (-1 for other lanes).
	Target int
	// StartAt and StopAt are offsets from the run's start; zero is none.
	StartAt, StopAt time.Duration
}

// The sampling interval a run may ask for: from MinInterval to
// MaxInterval in steps of IntervalStep, so that one clock serves every run.
const (
	MinInterval  = 50 * time.Millisecond
	MaxInterval  = 5 * time.Second
	IntervalStep = 50 * time.Millisecond
)

// ValidateLanes checks a spec's run and lanes against a host, mirroring
// the docker CLI's parsing and the engine's own rules, and returns every
// problem at once. A plan is returned only when there are none: nothing
// may start from a spec with any invalid part. The lab a spec names is
// left to the catalogue, whose Validate calls this.
func ValidateLanes(spec Spec, host Host) (Plan, Errors) {
	plan, errs := validateRun(spec, host)
	if len(spec.Lanes) == 0 || len(spec.Lanes) > MaxLanes {
		errs = append(errs, FieldError{Lane: -1, Field: "lanes", Message: fmt.Sprintf("want 1 to %d lanes, got %d", MaxLanes, len(spec.Lanes))})
		return plan, errs // nothing more is read of a spec past the cap
	}
	seen := map[string]int{}
	for i, lane := range spec.Lanes {
		pl, lerrs := validateLane(i, lane, spec.Mode, plan.Duration, host, seen)
		errs = append(errs, lerrs...)
		plan.Lanes = append(plan.Lanes, pl)
	}
	errs = append(errs, linkTargets(&plan)...)
	if len(errs) == 0 {
		plan.Groups = groups(plan)
		errs = placeExclusive(plan, host)
	}
	if len(errs) == 0 {
		errs = capRun(plan, host)
	}
	if len(errs) > 0 {
		return Plan{}, errs
	}
	return plan, nil
}

// validateRun checks what a spec says of the whole run: its name, mode,
// duration, interval and repeats (its lab is the catalogue's).
func validateRun(spec Spec, host Host) (Plan, Errors) {
	var errs Errors
	add := func(lane int, field, format string, args ...any) {
		errs = append(errs, FieldError{Lane: lane, Field: field, Message: fmt.Sprintf(format, args...)})
	}
	plan := Plan{Name: strings.TrimSpace(spec.Name), Mode: spec.Mode, Duration: DefaultDuration, Repeat: max(spec.Repeat, 1)}
	if spec.Interval != "" {
		d, err := time.ParseDuration(spec.Interval)
		switch {
		case err != nil:
			add(-1, "interval", "invalid duration %q: want e.g. \"50ms\" or \"250ms\"", spec.Interval)
		case d < MinInterval || d > MaxInterval || d%IntervalStep != 0:
			add(-1, "interval", "must be a multiple of %s from %s to %s, got %s", IntervalStep, MinInterval, MaxInterval, d)
		default:
			plan.Interval = d
		}
	}
	if spec.Repeat < 0 || spec.Repeat > MaxRepeat {
		add(-1, "repeat", "want 1 to %d runs, got %d", MaxRepeat, spec.Repeat)
	}
	if plan.Name == "" {
		plan.Name = "experiment"
	}
	if len(plan.Name) > 100 {
		add(-1, "name", "at most 100 characters")
	}
	switch spec.Mode {
	case Parallel, Sequential:
	case "":
		plan.Mode = Parallel
	default:
		add(-1, "mode", "must be %q or %q, not %q", Parallel, Sequential, spec.Mode)
	}
	if spec.Duration != "" {
		d, err := time.ParseDuration(spec.Duration)
		switch {
		case err != nil:
			add(-1, "duration", "invalid duration %q: want e.g. \"60s\" or \"2m\"", spec.Duration)
		case d < MinDuration || d > MaxDuration:
			add(-1, "duration", "must be from %s to %s, got %s", MinDuration, MaxDuration, d)
		default:
			plan.Duration = d
		}
	}
	return plan, errs
}

// linkTargets resolves each load lane's target to an http lane.
func linkTargets(plan *Plan) Errors {
	var errs Errors
	byName := map[string]int{}
	for i, l := range plan.Lanes {
		byName[l.Name] = i
	}
	for i := range plan.Lanes {
		w := plan.Lanes[i].Workload
		if w.Kind != KindLoad || w.Target == "" {
			continue
		}
		j, ok := byName[w.Target]
		switch {
		case !ok:
			errs = append(errs, FieldError{Lane: i, Field: "workload.target", Message: fmt.Sprintf("no lane is named %q", w.Target)})
		case !plan.Lanes[j].Workload.Service():
			errs = append(errs, FieldError{Lane: i, Field: "workload.target", Message: fmt.Sprintf("lane %q runs %s, not an http service", w.Target, plan.Lanes[j].Workload.Kind)})
		default:
			plan.Lanes[i].Target = j
			if t := plan.Lanes[j].Workload; t.Kind == KindImage {
				plan.Lanes[i].Workload.Port = t.Port
			}
		}
	}
	return errs
}

// PhaseBounds are the times at which lanes start or stop, from the run's
// start: the boundaries of its phases. Nil when no lane has an offset.
func (p Plan) PhaseBounds() []float64 {
	set := map[float64]bool{}
	for _, l := range p.Lanes {
		if l.StartAt > 0 {
			set[l.StartAt.Seconds()] = true
		}
		if l.StopAt > 0 {
			set[l.StopAt.Seconds()] = true
		}
	}
	var out []float64
	for t := range set {
		out = append(out, t)
	}
	sort.Float64s(out)
	return out
}

// TargetOf is the lane a load lane targets, or -1.
func (p Plan) TargetOf(lane int) int { return p.Lanes[lane].Target }

func groups(plan Plan) [][]int {
	if plan.Mode != Sequential {
		all := make([]int, len(plan.Lanes))
		for i := range all {
			all[i] = i
		}
		return [][]int{all}
	}
	var out [][]int
	placed := map[int]bool{}
	for i := range plan.Lanes {
		if placed[i] {
			continue
		}
		service := i
		if t := plan.TargetOf(i); t >= 0 {
			service = t
		}
		var g []int
		for j := range plan.Lanes {
			if !placed[j] && (j == service || plan.TargetOf(j) == service && plan.Lanes[service].Workload.Service()) {
				g = append(g, j)
				placed[j] = true
			}
		}
		out = append(out, g)
	}
	return out
}

// MemHeadroom is what a mem lane without --memory may hold beyond its own
// size: the runtime and its stack.
const MemHeadroom = 64 << 20

// Margins the host keeps for itself: memory for the system and the server,
// disk for the store and the engine's images.
const (
	memMargin  = 1 << 30
	diskMargin = 2 << 30
)

// capRun keeps a valid run within the host: its lanes' --memory in all
// within the host's memory, its disk lanes' files within the free space
// under the engine's data root, and its lanes' time in all within the
// longest a run may hold the host (a sequential run's lanes follow each
// other, each with the run's duration).
func capRun(plan Plan, host Host) Errors {
	var errs Errors
	var mem, disk int64
	for i, l := range plan.Lanes {
		mem += l.Resources.Memory
		if l.Workload.Disk() {
			disk += int64(l.Workload.MB) << 20
		}
		if host.MemTotal > 0 && mem > host.MemTotal-memMargin {
			errs = append(errs, FieldError{Lane: i, Field: "memory", Message: fmt.Sprintf(
				"the run's lanes ask for %s of --memory in all up to this lane, more than this host can give (%s, less %s for itself)",
				units.BytesSize(float64(mem)), units.BytesSize(float64(host.MemTotal)), units.BytesSize(memMargin))})
			break
		}
	}
	for i, l := range plan.Lanes {
		if !l.Workload.Disk() {
			continue
		}
		if free := host.DiskFree - diskMargin; host.DiskFree > 0 && disk > free {
			errs = append(errs, FieldError{Lane: i, Field: "workload.mb", Message: fmt.Sprintf(
				"the run's disk lanes would write %s in all, more than the %s free under the engine's data root, less %s kept for the store and the engine",
				units.BytesSize(float64(disk)), units.BytesSize(float64(host.DiskFree)), units.BytesSize(diskMargin))})
			break
		}
	}
	if plan.Mode == Sequential {
		if total := time.Duration(len(plan.Groups)) * plan.Duration; total > MaxDuration {
			errs = append(errs, FieldError{Lane: -1, Field: "duration", Message: fmt.Sprintf(
				"a sequential run's %d steps run one after another, each for up to %s: %s in all, more than the %s a run may hold the host",
				len(plan.Groups), plan.Duration, total, MaxDuration)})
		}
	}
	return errs
}

// MaxRepeat bounds how many times one spec may run in a series.
const MaxRepeat = 10
