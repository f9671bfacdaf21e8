package runner

import (
	"bytes"
	"cmp"
	"strconv"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/workload/wire"
)

// LaneResult is a lane as the API and the results table show it.
type LaneResult struct {
	Index     int             `json:"index"`
	Name      string          `json:"name"`
	Workload  specs.Workload  `json:"workload"`
	Unit      string          `json:"unit"`
	State     LaneState       `json:"state"`
	Container string          `json:"container,omitempty"`
	Requested specs.Resources `json:"requested"`
	// Applied is read back from the engine after the container is created,
	// and again after each live change.
	Applied  *specs.Resources `json:"applied,omitempty"`
	CPULimit float64          `json:"cpu_limit"`
	// ChartLimits are the limits now in force, in the charts' units;
	// Flags are those a live change can make, as the docker CLI spells
	// them (the controls show them); Disk and Load say what the workload
	// is, for the charts that only such lanes fill.
	ChartLimits ChartLimits       `json:"chart_limits"`
	Flags       map[string]string `json:"flags"`
	Disk        bool              `json:"disk"`
	Load        bool              `json:"load"`
	// Service says the lane is a Go service (an http workload), and
	// GOMAXPROCS is its runtime's as it last reported it.
	Service    bool `json:"service"`
	GOMAXPROCS int  `json:"gomaxprocs,omitempty"`
	// ProgressStoppedAt is when, in run seconds, the workload's reports
	// stopped coming while it still ran (0: they came to the end).
	ProgressStoppedAt float64 `json:"progress_stopped_at,omitempty"`
	DockerRun         string  `json:"docker_run,omitempty"`
	// Pod is the lane's resources in Kubernetes' words and its QoS class,
	// and PodYAML the pod the server made, on a Kubernetes engine.
	Pod     *specs.Pod `json:"pod,omitempty"`
	PodYAML string     `json:"pod_yaml,omitempty"`
	// Kernel is each cgroup file the applied limits write, read back from
	// the running container at its start and after each live change.
	Kernel   *engine.KernelView `json:"kernel,omitempty"`
	Warnings []string           `json:"warnings,omitempty"`
	// Modelled says whether the CPU model predicts this lane's workload.
	Modelled bool `json:"modelled"`
	// StartedAt and EndedAt are seconds since the run started.
	StartedAt   float64 `json:"started_at"`
	EndedAt     float64 `json:"ended_at"`
	WallSeconds float64 `json:"wall_seconds"`
	UserSeconds float64 `json:"user_seconds"`
	SysSeconds  float64 `json:"sys_seconds"`
	Throughput  float64 `json:"throughput"`
	Ratio       float64 `json:"ratio"` // wall time over the first lane's
	// The model's prediction, where it applies, and the measured mean.
	PredictedCores       *float64 `json:"predicted_cores"`
	PredictedWallSeconds *float64 `json:"predicted_wall_seconds"`
	MeasuredCores        float64  `json:"measured_cores"`
	// ExpectedCores is the model's allotment for the lane now, from the
	// lanes running and their current limits; it moves as lanes start,
	// end or change.
	ExpectedCores    *float64 `json:"expected_cores"`
	ExitCode         *int     `json:"exit_code"`
	OOMKilled        bool     `json:"oom_killed"`
	TimedOut         bool     `json:"timed_out"`
	Periods          uint64   `json:"periods"`
	ThrottledPeriods uint64   `json:"throttled_periods"`
	ThrottledSeconds float64  `json:"throttled_seconds"`
	// WaitSeconds is how long the lane's threads waited, runnable, for a
	// CPU while it was sampled (summed over its threads); nil where the
	// server does not see the engine's host.
	WaitSeconds *float64 `json:"wait_seconds,omitempty"`
	StatsSource string   `json:"stats_source,omitempty"`
	// A load lane's totals, like ab's: requests = successes + failures.
	Requests  int64         `json:"requests,omitempty"`
	Failures  int64         `json:"failures,omitempty"`
	RPS       float64       `json:"rps,omitempty"`
	LatencyMs *wire.Latency `json:"latency_ms,omitempty"`
	Result    string        `json:"result,omitempty"`
	// IOPS is a disk workload's operations per second over its run.
	IOPS float64 `json:"iops,omitempty"`
	// Phases are the lane's throughput and IOPS between the run's phase
	// bounds, while it ran.
	Phases []Phase `json:"phases,omitempty"`
	Error  string  `json:"error,omitempty"`
	// Failure is why the workload could not do its work, as its summary
	// names it ("unanswered": a load's service never answered).
	Failure wire.FailureKind `json:"failure,omitempty"`
	// Runtimes are a runtimes lane's first and last rounds of reports.
	Runtimes []wire.RuntimeRound `json:"runtimes,omitempty"`
}

// Phase is a stretch of a run between two phase bounds, as one lane saw it.
type Phase struct {
	Name        string  `json:"name"`
	FromSeconds float64 `json:"from_seconds"`
	ToSeconds   float64 `json:"to_seconds"`
	Throughput  float64 `json:"throughput"` // the workload's unit per second
	IOPS        float64 `json:"iops"`       // the workload's operations per second
	// IOPSError is the standard error of IOPS, relative to it, from the
	// spread of the phase's samples: how far the disk's own noise moves
	// the mean.
	IOPSError float64 `json:"iops_error,omitempty"`
	Cores     float64 `json:"cores"` // the lane's CPU, as its cgroup counts it
}

// ChangeRecord is a live limit change as the run keeps it.
type ChangeRecord struct {
	AtSeconds    float64         `json:"at_seconds"`
	Lane         int             `json:"lane"`
	Limits       specs.Limits    `json:"limits"`  // as asked
	Applied      specs.Resources `json:"applied"` // the lane's limits after, read back
	DockerUpdate string          `json:"docker_update"`
	Warnings     []string        `json:"warnings,omitempty"`
	// Resize is a pod lane's: its in-place resize as kubelet reports it.
	Resize *ResizeRecord `json:"resize,omitempty"`
}

// ResizeRecord is a pod's in-place resize: what it asked for, the kubectl
// command that asks the same, and kubelet's state of it (engine.Resize*)
// with its message, the container's restarts after it, and the pod's
// resources and QoS class as its status reports them applied.
type ResizeRecord struct {
	Requested specs.PodResources `json:"requested"`
	Command   string             `json:"kubectl"`
	State     string             `json:"state"`
	Message   string             `json:"message,omitempty"`
	Restarts  int32              `json:"restarts"`
	Applied   specs.PodResources `json:"applied"`
	QoS       string             `json:"qos"`
	// SettledAt is when kubelet settled a resize it had left in progress
	// or deferred when the change was answered (run seconds; 0: it was
	// settled then, or never).
	SettledAt float64 `json:"settled_at,omitempty"`
}

// EventRecord is an engine event on a lane: "oom" when the kernel's OOM
// killer struck in the lane's cgroup, "die" when its process ended.
type EventRecord struct {
	AtSeconds float64 `json:"at_seconds"`
	Lane      int     `json:"lane"`
	Kind      string  `json:"kind"`
	ExitCode  *int    `json:"exit_code,omitempty"`
}

// RunView is a run as the API shows it: a snapshot built from the run's
// state when asked.
type RunView struct {
	ID       string     `json:"id"`
	Lab      string     `json:"lab,omitempty"`
	Name     string     `json:"name"`
	Spec     specs.Spec `json:"spec"`
	Mode     specs.Mode `json:"mode"`
	Duration float64    `json:"duration_seconds"`
	State    State      `json:"state"`
	// Ended says whether State is final, so that pages need not know the
	// list of final states.
	Ended bool   `json:"ended"`
	Error string `json:"error,omitempty"`
	// StartedAt and EndedAt are when the run left the queue and when it
	// ended, its containers gone.
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// QueuePosition is a queued run's place in the queue: 1 starts next.
	QueuePosition int `json:"queue_position,omitempty"`
	// Host is where the run was measured: the engine, cgroup version and
	// CPUs, so that runs from two hosts compare knowingly.
	Host string `json:"host,omitempty"`
	// Engine is the name of the pool's engine the run ran on ("" with no
	// pool: the one engine).
	Engine string `json:"engine,omitempty"`
	// Imported runs were exported elsewhere and imported here.
	Imported   bool      `json:"imported,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	Elapsed    float64   `json:"elapsed_seconds"`
	IntervalMs int64     `json:"interval_ms"`
	StatsNote  string    `json:"stats_note,omitempty"`
	// Missing are the signals the run's samples lack, and why.
	Missing []engine.Missing `json:"missing_signals,omitempty"`
	Lanes   []LaneResult     `json:"lanes"`
	Changes []ChangeRecord   `json:"changes"`
	// Events are the engine's oom and die events on the lanes.
	Events []EventRecord `json:"events"`
	// PhaseBounds are the offsets at which lanes start or stop.
	PhaseBounds []float64 `json:"phase_bounds,omitempty"`
	// Verdict compares the model's prediction with the measurement, once
	// the run is done.
	Verdict *models.Verdict `json:"verdict,omitempty"`
	// VerdictMetric is what the run's verdict will judge (its lab's, or
	// the default's), known before it is judged: the run page draws the
	// charts that carry it first.
	VerdictMetric string `json:"verdict_metric,omitempty"`
	// Sampling says how the samples kept to the interval.
	Sampling *SamplingView `json:"sampling,omitempty"`
	// Noise is the host's own load around the run: the quiet check before
	// it and the foreign load and steal while it ran (an imported run's
	// may be absent).
	Noise *HostNoise `json:"noise,omitempty"`
	// Series is the run's place among a spec's repeats.
	Series *Series `json:"series,omitempty"`
	// Steps are a guided lab's steps and where each is.
	Steps []StepView `json:"steps,omitempty"`
	// Start is how together the lanes of a start barrier began their
	// work, once they have reported it.
	Start *StartView `json:"start,omitempty"`
}

// StartView is a start barrier's outcome: how many lanes it held, and
// the spread of the instants each lane's workload says its work began.
type StartView struct {
	Lanes  int     `json:"lanes"`
	SkewMs float64 `json:"skew_ms"`
	// StartsMs is the spread of the instants the engine said the same
	// lanes ran, one after another: what the barrier took away.
	StartsMs float64 `json:"starts_ms"`
}

// startView is the spread of the barrier lanes' first work, once at least
// two have said when it began. r.mu is held.
func startView(lanes []*laneState) *StartView {
	var lo, hi int64
	var first, last float64
	n := 0
	for _, l := range lanes {
		if !l.barrier || l.summary == nil || l.summary.BeganAt <= 0 {
			continue
		}
		if n == 0 || l.runningAt < first {
			first = l.runningAt
		}
		if n == 0 || l.runningAt > last {
			last = l.runningAt
		}
		b := l.summary.BeganAt
		if n == 0 || b < lo {
			lo = b
		}
		if n == 0 || b > hi {
			hi = b
		}
		n++
	}
	if n < 2 {
		return nil
	}
	return &StartView{Lanes: n, SkewMs: float64(hi-lo) / 1e6, StartsMs: (last - first) * 1e3}
}

// viewLocked builds the run's view from its state; r.mu is held.
// verdictMetric is the metric a plan's verdict judges; "" without one.
func verdictMetric(p specs.Plan) string {
	if len(p.Lanes) == 0 {
		return ""
	}
	if spec := models.JudgedBy(p); spec != nil {
		return spec.Metric
	}
	return ""
}

func (r *Run) viewLocked() RunView {
	s := &r.st
	v := RunView{
		ID: r.id, Lab: r.plan.Lab, Name: r.plan.Name, Spec: r.spec, Mode: r.plan.Mode, Duration: r.plan.Duration.Seconds(),
		State: s.state, Ended: s.state.Ended(), Error: s.err, QueuePosition: s.queuePos, Host: r.host, Engine: r.engine,
		CreatedAt: s.createdAt, IntervalMs: r.interval.Milliseconds(), StatsNote: r.statsNote,
		Missing:     r.env.Host.Samples.Missing,
		PhaseBounds: r.bounds, Verdict: s.verdict, VerdictMetric: verdictMetric(r.plan),
		Changes: append([]ChangeRecord{}, s.changes...), Events: append([]EventRecord{}, s.events...),
		Steps: s.guide.views(s.state.Ended()), Series: r.series, Sampling: s.jitter.view(r.interval),
		Noise: ptrTo(noiseOf(s.host, s.quiet, r.env.Host.ReadsHostLoad())),
		Start: startView(s.lanes),
	}
	if !s.start.IsZero() {
		v.StartedAt = s.start.UTC()
		if v.Ended && !s.endedAt.IsZero() {
			v.Elapsed = s.endedAt.Sub(s.start).Seconds()
		} else {
			v.Elapsed = time.Since(s.start).Seconds()
		}
	}
	if !s.endedAt.IsZero() {
		v.EndedAt = s.endedAt.UTC()
	}
	first := s.lanes[0].wall
	for i, l := range s.lanes {
		lv := l.result(i, r.plan.Lanes[i])
		if first > 0 && lv.WallSeconds > 0 && v.Ended {
			lv.Ratio = lv.WallSeconds / first
		}
		v.Lanes = append(v.Lanes, lv)
	}
	return v
}

// result is the lane's part of the view; pl is its plan.
func (l *laneState) result(i int, pl specs.PlannedLane) LaneResult {
	lv := LaneResult{
		Index: i, Name: pl.Name, Workload: pl.Workload, Unit: pl.Workload.Unit(), State: l.state,
		Requested: pl.Resources, CPULimit: pl.Resources.CPULimit(), Applied: l.applied, DockerRun: l.dockerRun, Pod: cmp.Or(l.pod, pl.Pod), PodYAML: l.manifest, Kernel: l.kernel,
		Warnings: l.warnings, Modelled: models.Modelled(pl.Workload), StartedAt: l.startedAt, EndedAt: l.endedAt,
		WallSeconds: l.wall, UserSeconds: l.user, SysSeconds: l.sys, Throughput: l.throughput, IOPS: l.iops,
		ExitCode: l.exitCode, OOMKilled: l.oomKilled, TimedOut: l.timedOut, StatsSource: l.source, Error: l.err,
		ExpectedCores: l.expected, Phases: l.phases, PredictedCores: l.predictedCores, PredictedWallSeconds: l.predictedWall,
		Periods: l.totals.Periods, ThrottledPeriods: l.totals.ThrottledPeriods,
		ThrottledSeconds: float64(l.totals.ThrottledNs) / 1e9, ProgressStoppedAt: l.stalledAt,
	}
	if l.waitRead {
		w := float64(l.waitNs) / 1e9
		lv.WaitSeconds = &w
	}
	if l.id != "" {
		lv.Container = l.id[:min(12, len(l.id))]
	}
	now := pl.Resources
	if l.applied != nil {
		lv.CPULimit = l.applied.CPULimit()
		now = *l.applied
	}
	lv.ChartLimits, lv.Flags = chartLimits(now), liveFlags(now)
	if lv.Pod != nil {
		lv.Flags = podFlags(*lv.Pod)
	}
	lv.Disk, lv.Load = pl.Workload.Disk(), pl.Workload.Kind == specs.KindLoad
	if lv.Service = pl.Workload.Kind == specs.KindHTTP; lv.Service {
		lv.GOMAXPROCS = l.gomaxprocs
	}
	lv.Runtimes = l.runtimes
	if s := l.summary; s != nil {
		lv.Result, lv.Failure = s.Result, s.Failure
		if pl.Workload.Kind == specs.KindLoad {
			lv.Requests, lv.Failures, lv.RPS, lv.LatencyMs = int64(s.Done), s.Failures, s.Throughput, s.Latency
		}
	}
	if lv.WallSeconds > 0 {
		lv.MeasuredCores = (lv.UserSeconds + lv.SysSeconds) / lv.WallSeconds
	}
	return lv
}

// MessageKind names what a stream message carries.
type MessageKind string

const (
	// KindRun carries the run's view, on every change of its state.
	KindRun MessageKind = "run"
	// KindSamples carries a batch of samples, on every tick.
	KindSamples MessageKind = "samples"
	// KindHost carries the host's load over a tick, where it is read.
	KindHost MessageKind = "host"
	// KindFeatured names the featured run, on the presenter's stream.
	KindFeatured MessageKind = "featured"
)

// Message is what a live stream carries. The code that writes it and the
// code that reads it back (replay, export, import, CSV) share this type.
type Message struct {
	Type    MessageKind     `json:"type"`
	Run     *RunView        `json:"run,omitempty"`
	Samples []engine.Sample `json:"samples,omitempty"`
	// Host is the host's load over a tick, in a KindHost message.
	Host *HostSample `json:"host,omitempty"`
	// ID is the featured run's, in a KindFeatured message.
	ID string `json:"id,omitempty"`
	// SentUs is when a batch of samples was published, in microseconds
	// since the Unix epoch, to measure delivery.
	SentUs int64 `json:"sent_us,omitempty"`
}

// SentUs picks a samples message's sent_us out of its bytes without
// decoding the batch: for clients that measure delivery and must not spend
// the CPU the server needs (the viewer benchmarks, the soak).
func SentUs(msg []byte) (int64, bool) {
	if !bytes.HasPrefix(msg, []byte(`{"type":"samples"`)) {
		return 0, false
	}
	i := bytes.LastIndex(msg, []byte(`"sent_us":`))
	if i < 0 {
		return 0, false
	}
	rest := msg[i+len(`"sent_us":`):]
	end := bytes.IndexAny(rest, ",}")
	if end < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	return n, err == nil
}

// ChartLimits are a lane's limits in the charts' units, 0 where none is
// set: each chart draws its lane's limit as a dashed line.
type ChartLimits struct {
	CPU        float64 `json:"cpu"`
	MemMiB     float64 `json:"mem_mib"`
	ReadMiBs   float64 `json:"read_mib_s"`
	WriteMiBs  float64 `json:"write_mib_s"`
	IORequests float64 `json:"io_requests_s"`
	Pids       float64 `json:"pids"`
}

func chartLimits(r specs.Resources) ChartLimits {
	return ChartLimits{CPU: r.CPULimit(), MemMiB: float64(r.Memory) / engine.MiB,
		ReadMiBs: float64(r.ReadBps.Rate) / engine.MiB, WriteMiBs: float64(r.WriteBps.Rate) / engine.MiB,
		IORequests: float64(r.ReadIOps.Rate + r.WriteIOps.Rate), Pids: float64(r.PidsLimit)}
}

// liveFlags are the flags a live change can make (specs.LiveFields)
// as r holds them, in the docker CLI's syntax; a flag not set is "".
func liveFlags(r specs.Resources) map[string]string {
	out := map[string]string{}
	for _, f := range specs.LiveFields {
		out[f] = ""
	}
	for _, f := range r.Flags() {
		if _, ok := out[f.Name]; ok {
			out[f.Name] = f.Value
		}
	}
	return out
}

// podFlags are a pod lane's resources a resize can change, as the
// controls name them: "resources.limits.cpu" and the like.
func podFlags(p specs.Pod) map[string]string {
	r := p.Requested()
	return map[string]string{
		"resources.requests.cpu": string(r.Requests.CPU), "resources.limits.cpu": string(r.Limits.CPU),
		"resources.requests.memory": string(r.Requests.Memory), "resources.limits.memory": string(r.Limits.Memory),
	}
}

func ptrTo[T any](v T) *T { return &v }
