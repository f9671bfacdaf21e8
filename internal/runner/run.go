package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/hub"
	"github.com/limitlab/limitlab/internal/store"
	"github.com/limitlab/limitlab/internal/workload"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// State of a run.
type State string

const (
	StateQueued  State = "queued"
	StateRunning State = "running"
	StateDone    State = "done"
	StateFailed  State = "failed"
	StateStopped State = "stopped"
	// StateRefused: the run waited in the queue as long as a run may,
	// and never started.
	StateRefused State = "refused"
	// StateInterrupted: the server died while the run was queued or
	// running; what was recorded until then is kept.
	StateInterrupted State = "interrupted"
)

// Ended says whether a run in state s is over.
func (s State) Ended() bool { return s != StateQueued && s != StateRunning }

// Lane states.
const (
	LanePending = "pending"
	LaneRunning = "running"
	LaneExited  = "exited"
	LaneSkipped = "skipped"
)

// LaneResult is a lane as the API and the results table show it.
type LaneResult struct {
	Index     int                   `json:"index"`
	Name      string                `json:"name"`
	Workload  experiments.Workload  `json:"workload"`
	Unit      string                `json:"unit"`
	State     string                `json:"state"`
	Container string                `json:"container,omitempty"`
	Requested experiments.Resources `json:"requested"`
	// Applied is read back from the engine after the container is created.
	Applied   *experiments.Resources `json:"applied,omitempty"`
	CPULimit  float64                `json:"cpu_limit"`
	DockerRun string                 `json:"docker_run,omitempty"`
	Warnings  []string               `json:"warnings,omitempty"`
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
	StatsSource      string   `json:"stats_source,omitempty"`
	// A load lane's totals, like ab's: requests = successes + failures.
	Requests  int64             `json:"requests,omitempty"`
	Failures  int64             `json:"failures,omitempty"`
	RPS       float64           `json:"rps,omitempty"`
	LatencyMs *workload.Latency `json:"latency_ms,omitempty"`
	Result    string            `json:"result,omitempty"`
	// IOPS is a disk workload's operations per second over its run.
	IOPS float64 `json:"iops,omitempty"`
	// Phases are the lane's throughput and IOPS between the run's phase
	// bounds, while it ran.
	Phases    []Phase `json:"phases,omitempty"`
	Error     string  `json:"error,omitempty"`
	completed bool    // ran to its end, for the model
	// atStart is what the engine applied when the container was created;
	// Applied follows live changes.
	atStart experiments.Resources
}

// Phase is a stretch of a run between two phase bounds, as one lane saw it.
type Phase struct {
	Name        string  `json:"name"`
	FromSeconds float64 `json:"from_seconds"`
	ToSeconds   float64 `json:"to_seconds"`
	Throughput  float64 `json:"throughput"` // the workload's unit per second
	IOPS        float64 `json:"iops"`       // the workload's operations per second
}

// ChangeRecord is a live limit change as the run keeps it.
type ChangeRecord struct {
	AtSeconds    float64               `json:"at_seconds"`
	Lane         int                   `json:"lane"`
	Limits       experiments.Limits    `json:"limits"`  // as asked
	Applied      experiments.Resources `json:"applied"` // the lane's limits after, read back
	DockerUpdate string                `json:"docker_update"`
	Warnings     []string              `json:"warnings,omitempty"`
}

// RunView is a run as the API shows it.
type RunView struct {
	ID       string           `json:"id"`
	Lab      string           `json:"lab,omitempty"`
	Name     string           `json:"name"`
	Spec     experiments.Spec `json:"spec"`
	Mode     experiments.Mode `json:"mode"`
	Duration float64          `json:"duration_seconds"`
	State    State            `json:"state"`
	Error    string           `json:"error,omitempty"`
	// StartedAt and EndedAt are when the run left the queue and when it
	// ended, its containers gone.
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// QueuePosition is a queued run's place in the queue: 1 starts next.
	QueuePosition int `json:"queue_position,omitempty"`
	// Host is where the run was measured: the engine, cgroup version and
	// CPUs, so that runs from two hosts compare knowingly.
	Host string `json:"host,omitempty"`
	// Imported runs were exported elsewhere and imported here.
	Imported   bool           `json:"imported,omitempty"`
	CreatedAt  time.Time      `json:"created_at"`
	Elapsed    float64        `json:"elapsed_seconds"`
	IntervalMs int64          `json:"interval_ms"`
	StatsNote  string         `json:"stats_note,omitempty"`
	Lanes      []LaneResult   `json:"lanes"`
	Changes    []ChangeRecord `json:"changes"`
	// Events are the engine's oom and die events on the lanes.
	Events []EventRecord `json:"events"`
	// PhaseBounds are the offsets at which lanes start or stop.
	PhaseBounds []float64 `json:"phase_bounds,omitempty"`
	// Verdict compares the model's prediction with the measurement, once
	// the run is done.
	Verdict *experiments.Verdict `json:"verdict,omitempty"`
}

// Message is what the live stream carries: a run view on every change of
// state, and a batch of samples on every tick.
type Message struct {
	Type    string   `json:"type"` // "run" or "samples"
	Run     *RunView `json:"run,omitempty"`
	Samples []Sample `json:"samples,omitempty"`
	// SentUs is when a batch of samples was published, in microseconds
	// since the Unix epoch, to measure delivery.
	SentUs int64 `json:"sent_us,omitempty"`
}

// reader is anything that takes a reading of a container's counters.
type reader interface{ Read() (Counters, error) }

// Run is one experiment on the engine.
type Run struct {
	id          string
	participant string
	ask         ask
	plan        experiments.Plan
	hub         *hub.Hub
	done        chan struct{}
	start       time.Time
	store       *store.Store // nil: kept in memory only
	expiry      *time.Timer  // refuses the run if it waits too long

	// pubMu keeps the hub's order and the store's the same.
	pubMu sync.Mutex

	mu      sync.Mutex
	view    RunView
	lanes   []*laneRT
	cancel  context.CancelFunc
	stopped bool
}

// laneRT is a lane's runtime state, guarded by Run.mu.
type laneRT struct {
	id       string
	reader   reader
	every    time.Duration // how often reader may be read
	lastRead time.Time
	prev     Counters
	hasPrev  bool
	rate     float64 // workload's last reported rate
	reported bool    // the workload has reported progress
	iops     float64 // a disk workload's last reported operations per second
	// A load lane's last interval: its latency and failures so far.
	latency  *workload.Latency
	failures int64
	done     float64 // workload's last reported total
	summary  *workload.Line
	samples  []experiments.CoreSample
	phased   []Sample // every sample, kept when the run has phases
}

// ID is the run's id.
func (r *Run) ID() string { return r.id }

// Hub is the run's live fan-out.
func (r *Run) Hub() *hub.Hub { return r.hub }

// Done is closed when the run has ended and its containers are gone.
func (r *Run) Done() <-chan struct{} { return r.done }

// View is a snapshot of the run.
func (r *Run) View() RunView {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.viewLocked()
}

func (r *Run) viewLocked() RunView {
	v := r.view
	v.Lanes = append([]LaneResult(nil), r.view.Lanes...)
	v.Changes = append([]ChangeRecord{}, r.view.Changes...)
	v.Events = append([]EventRecord{}, r.view.Events...)
	switch {
	case r.start.IsZero():
	case !v.EndedAt.IsZero():
		v.Elapsed = v.EndedAt.Sub(r.start).Seconds()
	default:
		v.Elapsed = time.Since(r.start).Seconds()
	}
	return v
}

// publishView sends the run's current view to its viewers.
func (r *Run) publishView() {
	r.mu.Lock()
	v := r.viewLocked()
	r.mu.Unlock()
	r.publish(Message{Type: "run", Run: &v})
}

func (r *Run) publish(m Message) {
	b, err := json.Marshal(m)
	if err != nil {
		return
	}
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	r.hub.Publish(b)
	if r.store != nil {
		r.store.Append(r.id, b)
	}
}

func (r *Run) setLane(i int, f func(l *LaneResult)) {
	r.mu.Lock()
	f(&r.view.Lanes[i])
	r.mu.Unlock()
	r.publishView()
}

// Options configure a Manager.
type Options struct {
	Image      string        // the workload image reference
	Interval   time.Duration // sampling interval; 250ms if zero
	CgroupRoot string        // /sys/fs/cgroup if empty
	Host       HostInfo
	Log        *slog.Logger
	// Store keeps runs beyond the server's life; nil keeps them in
	// memory only.
	Store *store.Store
	// MaxRunning is how many runs may run at once (1 if zero): the others
	// wait in the queue, for at most MaxWait (10 minutes if zero).
	MaxRunning int
	MaxWait    time.Duration
	// Quotas are checked when a run is submitted; DefaultQuotas if nil.
	Quotas *Quotas
}

// Manager starts runs and keeps them in memory.
type Manager struct {
	eng  Engine
	opts Options
	log  *slog.Logger

	ctx    context.Context // cancelled by Shutdown
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	runs    map[string]*Run // in memory: queued, running, and ended without a store
	order   []*Run
	queue   *fairQueue[*Run]
	running map[*Run]bool

	featured *featured

	// startLatency is how long the engine took to start the last
	// container, to start phased lanes on time.
	startLatency atomic.Int64
}

// MinInterval and MaxInterval bound the sampling interval; engine stats are
// never asked for more than once a second.
const (
	MinInterval    = 100 * time.Millisecond
	MaxInterval    = 5 * time.Second
	engineInterval = time.Second
)

// NewManager returns a manager for runs on eng.
func NewManager(eng Engine, opts Options) *Manager {
	if opts.Interval == 0 {
		opts.Interval = 250 * time.Millisecond
	}
	if opts.CgroupRoot == "" {
		opts.CgroupRoot = "/sys/fs/cgroup"
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.MaxRunning <= 0 {
		opts.MaxRunning = 1
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = 10 * time.Minute
	}
	if opts.Quotas == nil {
		opts.Quotas = &DefaultQuotas
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{eng: eng, opts: opts, log: opts.Log, ctx: ctx, cancel: cancel, runs: map[string]*Run{},
		queue: newFairQueue[*Run](), running: map[*Run]bool{}, featured: newFeatured()}
	m.recover()
	// Until a start is measured: what Docker 20.10 takes on a small host.
	m.startLatency.Store(int64(500 * time.Millisecond))
	m.wg.Add(1)
	// The event watcher lives as long as the manager.
	go func() {
		defer m.wg.Done()
		m.watchEvents(ctx)
	}()
	return m
}

// Host is what the manager knows of the engine's host.
func (m *Manager) Host() HostInfo { return m.opts.Host }

// execute runs a plan to its end. The run reaches its final state only
// after its containers are gone, so a finished run never has any.
func (m *Manager) execute(ctx context.Context, r *Run) {
	defer close(r.done)
	defer r.hub.Close()
	log := m.log.With(slog.String("run", r.id))

	r.mu.Lock()
	r.view.State = StateRunning
	r.view.QueuePosition = 0
	r.start = time.Now()
	r.view.StartedAt = r.start.UTC()
	r.mu.Unlock()
	r.save()
	r.publishView()

	state, msg := m.runLanes(ctx, r, log)
	m.removeAll(r, log)
	m.finish(r, state, msg)
	r.save()
}

// runLanes creates every lane's container, runs the lanes in the plan's
// mode, and says how the run ended.
func (m *Manager) runLanes(ctx context.Context, r *Run, log *slog.Logger) (State, string) {
	// Every container is created before any starts, so an engine that
	// refuses one lane's config starts nothing.
	if failed := m.createAll(ctx, r); failed {
		r.mu.Lock()
		stopped := r.stopped
		r.mu.Unlock()
		switch {
		case stopped:
			return StateStopped, "stopped before its lanes started"
		case ctx.Err() != nil:
			return StateStopped, "the server is shutting down"
		}
		return StateFailed, "the engine refused a lane: nothing was started"
	}

	sctx, stopSampling := context.WithCancel(ctx)
	var sampling sync.WaitGroup
	sampling.Add(1)
	// The sampler lives until every lane has ended.
	go func() {
		defer sampling.Done()
		m.sample(sctx, r)
	}()

	// Groups run one after another, the lanes of a group together.
	for _, group := range r.plan.Groups {
		if ctx.Err() != nil {
			for _, i := range group {
				r.setLane(i, func(l *LaneResult) { l.State = LaneSkipped })
			}
			continue
		}
		var lanes sync.WaitGroup
		for _, i := range group {
			lanes.Add(1)
			go func() {
				defer lanes.Done()
				m.runLane(ctx, r, i, log)
				m.stopIdleService(r, i, log)
			}()
		}
		lanes.Wait()
	}
	stopSampling()
	sampling.Wait()

	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.stopped:
		return StateStopped, ""
	case ctx.Err() != nil:
		return StateStopped, "the server is shutting down"
	}
	for _, l := range r.view.Lanes {
		if l.Error != "" {
			return StateFailed, fmt.Sprintf("lane %d (%s): %s", l.Index, l.Name, l.Error)
		}
	}
	return StateDone, ""
}

func (m *Manager) finish(r *Run, s State, msg string) {
	r.mu.Lock()
	r.view.State = s
	r.view.EndedAt = time.Now().UTC()
	r.view.Error = msg
	first := r.view.Lanes[0].WallSeconds
	for i := range r.view.Lanes {
		if l := &r.view.Lanes[i]; first > 0 && l.WallSeconds > 0 {
			l.Ratio = l.WallSeconds / first
		}
	}
	r.phasesLocked()
	m.judgeLocked(r)
	r.mu.Unlock()
	r.publishView()
}

// phasesLocked gives each lane its throughput and IOPS in every phase it
// ran in: the mean of its samples wholly inside the phase. A phase is
// measured as it really happened, since the engine may take seconds to
// start or stop containers on a busy host: from half a second after the
// last start or stop at its opening bound, to the first at its closing one
// or a second before the bound, when the next lanes are asked to start.
func (r *Run) phasesLocked() {
	bounds := r.view.PhaseBounds
	if bounds == nil {
		return
	}
	end := time.Since(r.start).Seconds()
	// first and last are when the lanes that start or stop at bound b
	// really did.
	first, last := make([]float64, len(bounds)), make([]float64, len(bounds))
	for k, b := range bounds {
		first[k], last[k] = math.Inf(1), b
		for i, pl := range r.plan.Lanes {
			l := r.view.Lanes[i]
			var at float64
			switch {
			case pl.StartAt.Seconds() == b && l.StartedAt > 0:
				at = l.StartedAt
			case pl.StopAt.Seconds() == b && l.EndedAt > 0:
				at = l.EndedAt
			default:
				continue
			}
			first[k], last[k] = min(first[k], at), max(last[k], at)
		}
		if math.IsInf(first[k], 1) {
			first[k] = b
		}
	}
	for i := range r.view.Lanes {
		var phases []Phase
		for k := 0; k <= len(bounds); k++ {
			from, to := 0.0, end
			if k > 0 {
				from = last[k-1] + 0.5
			}
			if k < len(bounds) {
				to = min(first[k], bounds[k]-1)
			}
			var thr, iops, n float64
			for _, s := range r.lanes[i].phased {
				if s.T-s.DT >= from && s.T <= to {
					thr, iops, n = thr+s.Throughput, iops+s.IOPS, n+1
				}
			}
			if n == 0 {
				continue
			}
			phases = append(phases, Phase{
				Name:        fmt.Sprintf("phase %d", k+1),
				FromSeconds: from, ToSeconds: to, Throughput: thr / n, IOPS: iops / n,
			})
		}
		r.view.Lanes[i].Phases = phases
	}
}

// expect recomputes every running lane's expected cores and publishes the
// run: the prediction follows the run from each change on.
func (m *Manager) expect(r *Run) {
	h := m.modelHost()
	r.mu.Lock()
	var idx []int
	var demands []experiments.CPUDemand
	for i := range r.view.Lanes {
		l := &r.view.Lanes[i]
		l.ExpectedCores = nil
		if l.State == LaneRunning && l.Applied != nil {
			idx = append(idx, i)
			demands = append(demands, experiments.DemandOn(l.Workload, *l.Applied, h))
		}
	}
	for k, c := range experiments.Allot(demands, h.NCPU) {
		if l := &r.view.Lanes[idx[k]]; l.Workload.Kind != experiments.KindMem {
			l.ExpectedCores = &c
		}
	}
	r.mu.Unlock()
	r.publishView()
}

func (m *Manager) modelHost() experiments.ModelHost {
	return experiments.ModelHost{NCPU: m.opts.Host.NCPU, CgroupV2: m.opts.Host.CgroupVersion == "2"}
}

// judgeLocked puts the model's prediction beside each lane's measurement
// and, for a run that is done, gives the verdict.
func (m *Manager) judgeLocked(r *Run) {
	out := make([]experiments.LaneOutcome, len(r.view.Lanes))
	for i, l := range r.view.Lanes {
		out[i] = experiments.LaneOutcome{Start: l.StartedAt, Wall: l.WallSeconds, CPUSeconds: l.UserSeconds + l.SysSeconds,
			Completed: l.completed, Applied: l.atStart}
		if l.WallSeconds > 0 {
			r.view.Lanes[i].MeasuredCores = out[i].CPUSeconds / l.WallSeconds
		}
	}
	if r.plan.Mode == experiments.Parallel {
		// The window in which every lane was running.
		from, to := 0.0, math.Inf(1)
		for _, l := range r.view.Lanes {
			from, to = max(from, l.StartedAt), min(to, l.EndedAt)
		}
		for i := range out {
			out[i].WindowCores = experiments.WindowMean(r.lanes[i].samples, from, to)
		}
	}
	var changes []experiments.Change
	for _, c := range r.view.Changes {
		changes = append(changes, experiments.Change{At: c.AtSeconds, Lane: c.Lane, Applied: c.Applied})
	}
	pred := experiments.Predict(r.plan, m.modelHost(), out, changes)
	for i, p := range pred.Lanes {
		if p.OK {
			cores, wall := p.Cores, p.Wall
			r.view.Lanes[i].PredictedCores, r.view.Lanes[i].PredictedWallSeconds = &cores, &wall
		}
	}
	spec := r.plan.Verdict
	if spec == nil {
		spec = experiments.DefaultVerdict(r.plan)
	}
	if spec == nil || r.view.State != StateDone {
		return
	}
	var v experiments.Verdict
	switch spec.Metric {
	case experiments.MetricIOLimit, experiments.MetricPhaseRecovery:
		io := make([]experiments.IOOutcome, len(r.view.Lanes))
		for i, l := range r.view.Lanes {
			io[i] = experiments.IOOutcome{Completed: l.completed, Throughput: l.Throughput, IOPS: l.IOPS}
			for _, p := range l.Phases {
				// A disk lane's phases compare IOPS, any other its own
				// throughput.
				rate := p.Throughput
				if l.Workload.Disk() {
					rate = p.IOPS
				}
				io[i].PhaseRates = append(io[i].PhaseRates, rate)
			}
		}
		v = experiments.JudgeIO(*spec, r.plan, io, m.opts.Host.Queue)
	default:
		v = experiments.Judge(*spec, r.plan, pred, out)
	}
	r.view.Verdict = &v
}

// createAll creates every lane's container and reads back what the engine
// applied. It reports whether any lane failed.
func (m *Manager) createAll(ctx context.Context, r *Run) bool {
	// Load lanes join their service's network namespace, so services are
	// created first.
	order := make([]int, 0, len(r.plan.Lanes))
	for pass := range 2 {
		for i, l := range r.plan.Lanes {
			if (l.Target >= 0) == (pass == 1) {
				order = append(order, i)
			}
		}
	}
	// A create is not cancelled with the run: the engine would finish it
	// anyway, and the run must know the container to remove it.
	engineCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	for _, i := range order {
		if ctx.Err() != nil {
			return true // stopped: the run says so
		}
		l := r.plan.Lanes[i]
		targetID := ""
		if l.Target >= 0 {
			r.mu.Lock()
			targetID = r.lanes[l.Target].id
			r.mu.Unlock()
		}
		if l.Workload.Disk() {
			if _, err := m.eng.VolumeCreate(engineCtx, client.VolumeCreateOptions{
				Name: containerName(r.id, i), Labels: map[string]string{LabelRun: r.id, LabelLane: strconv.Itoa(i)},
			}); err != nil {
				r.setLane(i, func(lr *LaneResult) { lr.Error = "engine: create volume: " + err.Error() })
				return true
			}
		}
		res, err := m.eng.ContainerCreate(engineCtx, createOptions(r.id, i, l, m.opts.Image, targetID))
		if err != nil {
			r.setLane(i, func(lr *LaneResult) { lr.Error = "engine: " + err.Error() })
			return true
		}
		r.mu.Lock()
		r.lanes[i].id = res.ID
		r.mu.Unlock()
		ins, err := m.eng.ContainerInspect(engineCtx, res.ID, client.ContainerInspectOptions{})
		if err != nil {
			r.setLane(i, func(lr *LaneResult) { lr.Error = "engine: inspect: " + err.Error() })
			return true
		}
		applied := appliedResources(ins.Container.HostConfig.Resources)
		r.setLane(i, func(lr *LaneResult) {
			lr.Container = res.ID[:12]
			lr.Applied, lr.atStart = &applied, applied
			lr.CPULimit = applied.CPULimit()
			lr.Warnings = res.Warnings
			network := ""
			if l.Target >= 0 {
				network = "container:" + containerName(r.id, l.Target)
			}
			lr.DockerRun = experiments.DockerRun(ImageRepo, l.Workload, applied, network)
		})
	}
	return false
}

// awaitRunning waits until lane t runs, failing if it ends first.
func (r *Run) awaitRunning(ctx context.Context, t int) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		r.mu.Lock()
		st := r.view.Lanes[t].State
		name := r.view.Lanes[t].Name
		r.mu.Unlock()
		switch st {
		case LaneRunning:
			return nil
		case LaneExited, LaneSkipped:
			return fmt.Errorf("its service lane %q is not running", name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// stopIdleService stops the http lane that load lane i targeted once every
// lane loading it has ended: SIGTERM, on which the service prints its
// summary and exits cleanly.
func (m *Manager) stopIdleService(r *Run, i int, log *slog.Logger) {
	t := r.plan.TargetOf(i)
	if t < 0 {
		return
	}
	r.mu.Lock()
	for j := range r.plan.Lanes {
		if r.plan.TargetOf(j) == t && r.view.Lanes[j].State != LaneExited && r.view.Lanes[j].State != LaneSkipped {
			r.mu.Unlock()
			return
		}
	}
	id, running := r.lanes[t].id, r.view.Lanes[t].State == LaneRunning
	r.mu.Unlock()
	if !running {
		return
	}
	m.signal(id, "TERM", log)
}

// removeAll removes the run's containers, even when the run was cancelled.
func (m *Manager) removeAll(r *Run, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r.mu.Lock()
	var ids []string
	for _, l := range r.lanes {
		if l.id != "" {
			ids = append(ids, l.id)
		}
	}
	r.mu.Unlock()
	for _, id := range ids {
		if _, err := m.eng.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			log.Warn("remove container", slog.String("id", id[:12]), slog.Any("err", err))
		}
	}
	// A create the engine finished after the run was stopped returned no
	// id to the run: find such containers by the run's label.
	if _, err := Reap(ctx, m.eng, r.id, log); err != nil {
		log.Warn("reap", slog.Any("err", err))
	}
	for i, l := range r.plan.Lanes {
		if l.Workload.Disk() {
			if _, err := m.eng.VolumeRemove(ctx, containerName(r.id, i), client.VolumeRemoveOptions{Force: true}); err != nil {
				log.Warn("remove volume", slog.String("name", containerName(r.id, i)), slog.Any("err", err))
			}
		}
	}
}

// runLane starts lane i, follows it until it exits (killing it at the run's
// duration or when the run is stopped) and records its results.
func (m *Manager) runLane(ctx context.Context, r *Run, i int, log *slog.Logger) {
	r.mu.Lock()
	rt := r.lanes[i]
	id := rt.id
	r.mu.Unlock()
	// Waiting must outlive ctx: after a stop the lane is killed and its
	// exit still has to be collected.
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), r.plan.Duration+time.Minute)
	defer wcancel()
	wait := m.eng.ContainerWait(wctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})

	if d := r.plan.Lanes[i].StartAt; d > 0 {
		// The lane's phase begins later in the run. Starting a container
		// takes the engine a few hundred milliseconds, so ask that much
		// earlier: the latest start's latency, at most a second, read a
		// second before the offset so that this run's own starts count.
		for _, early := range []bool{true, false} {
			lead := min(time.Duration(m.startLatency.Load()), time.Second)
			if early {
				lead = time.Second + time.Second
			}
			t := time.NewTimer(time.Until(r.start.Add(d - lead)))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				r.setLane(i, func(l *LaneResult) { l.State = LaneSkipped })
				return
			}
		}
	}
	if t := r.plan.Lanes[i].Target; t >= 0 {
		// A load lane joins its service's network namespace, which exists
		// only while the service runs.
		if err := r.awaitRunning(ctx, t); err != nil {
			r.setLane(i, func(l *LaneResult) { l.State = LaneExited; l.Error = err.Error() })
			return
		}
	}
	asked := time.Now()
	if _, err := m.eng.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		r.setLane(i, func(l *LaneResult) { l.State = LaneExited; l.Error = "engine: start: " + err.Error() })
		return
	}
	m.startLatency.Store(int64(time.Since(asked)))
	started := time.Since(r.start).Seconds()
	pid := 0
	if ins, err := m.eng.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); err == nil && ins.Container.State != nil {
		pid = ins.Container.State.Pid
	}
	rd, every, source := m.newReader(ctx, id, pid)
	first, ferr := rd.Read()
	r.mu.Lock()
	rt.reader, rt.every = rd, every
	if ferr == nil {
		rt.prev, rt.hasPrev, rt.lastRead = first, true, first.At
	}
	r.mu.Unlock()
	r.setLane(i, func(l *LaneResult) { l.State = LaneRunning; l.StartedAt = started; l.StatsSource = source })
	m.expect(r)

	var stderr bytes.Buffer
	logsDone := make(chan struct{})
	// The log follower lives until the container's output ends (it exits).
	go func() {
		defer close(logsDone)
		m.followLogs(wctx, r, rt, id, &stderr)
	}()

	// A sequential lane has the run's duration to itself; a parallel one
	// ends with the run.
	limit := r.plan.Duration
	if r.plan.Mode == experiments.Parallel {
		limit = time.Until(r.start.Add(r.plan.Duration))
	}
	timer := time.NewTimer(limit)
	defer timer.Stop()
	var stopAt, grace <-chan time.Time
	if d := r.plan.Lanes[i].StopAt; d > 0 {
		t := time.NewTimer(time.Until(r.start.Add(d)))
		defer t.Stop()
		stopAt = t.C
	}
	timedOut, stopped := false, false
	stop := ctx.Done()
	var exit container.WaitResponse
	var waitErr error
	for waiting := true; waiting; {
		select {
		case exit = <-wait.Result:
			waiting = false
		case waitErr = <-wait.Error:
			waiting = false
		case <-timer.C:
			timedOut = true
			m.kill(id, log)
		case <-stopAt:
			// The end of the lane's phase: asked to stop, the workload
			// prints its summary and exits; it gets a few seconds.
			stopAt, grace = nil, time.After(5*time.Second)
			m.signal(id, "TERM", log)
		case <-grace:
			grace = nil
			m.kill(id, log)
		case <-stop:
			stopped, stop = true, nil // keep waiting for the exit
			m.kill(id, log)
		}
	}
	select {
	case <-logsDone:
	case <-time.After(5 * time.Second):
	}
	ended := time.Since(r.start).Seconds()

	ins, ierr := m.eng.ContainerInspect(wctx, id, client.ContainerInspectOptions{})
	r.mu.Lock()
	l := &r.view.Lanes[i]
	l.State, l.EndedAt, l.TimedOut = LaneExited, ended, timedOut
	code := int(exit.StatusCode)
	if waitErr == nil {
		l.ExitCode = &code
	} else {
		l.Error = "engine: wait: " + waitErr.Error()
	}
	if ierr == nil && ins.Container.State != nil {
		st := ins.Container.State
		l.OOMKilled = st.OOMKilled
		if l.ExitCode == nil {
			c := st.ExitCode
			l.ExitCode = &c
		}
		if s, f := parseTime(st.StartedAt), parseTime(st.FinishedAt); !s.IsZero() && f.After(s) {
			l.WallSeconds = f.Sub(s).Seconds()
		}
	}
	last := rt.prev
	l.Periods, l.ThrottledPeriods = last.Periods, last.ThrottledPeriods
	l.ThrottledSeconds = float64(last.ThrottledNs) / 1e9
	l.UserSeconds, l.SysSeconds = float64(last.UserNs)/1e9, float64(last.SysNs)/1e9
	l.completed = rt.summary != nil && l.ExitCode != nil && *l.ExitCode == 0 && !timedOut && !stopped
	if s := rt.summary; s != nil {
		// The workload's own account is exact; the container's times
		// include the runtime's start-up.
		l.WallSeconds, l.UserSeconds, l.SysSeconds = s.WallS, s.UserS, s.SysS
		l.Throughput = s.Throughput
		l.Result = s.Result
		l.IOPS = s.IOPS
		if l.Workload.Kind == experiments.KindLoad {
			l.Requests, l.Failures, l.RPS, l.LatencyMs = int64(s.Done), s.Failures, s.Throughput, s.Latency
		}
	} else if l.WallSeconds > 0 {
		l.Throughput = rt.done / l.WallSeconds
	}
	if l.ExitCode != nil && *l.ExitCode != 0 && !timedOut && !stopped && !l.OOMKilled {
		if msg := bytes.TrimSpace(stderr.Bytes()); len(msg) > 0 {
			l.Error = string(msg)
		}
	}
	rt.reader = nil
	r.mu.Unlock()
	m.expect(r)
}

func (m *Manager) kill(id string, log *slog.Logger) { m.signal(id, "KILL", log) }

func (m *Manager) signal(id, sig string, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := m.eng.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: sig}); err != nil {
		log.Debug("signal container", slog.String("id", id[:12]), slog.String("signal", sig), slog.Any("err", err))
	}
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() < 2000 {
		return time.Time{}
	}
	return t
}

// newReader picks how a container's counters are read: its cgroup files if
// the server can see them, else the engine's one-shot stats, at most once a
// second.
func (m *Manager) newReader(ctx context.Context, id string, pid int) (reader, time.Duration, string) {
	if m.opts.Host.StatsSource == "cgroup" {
		if cg, err := FindCgroup(m.opts.CgroupRoot, id, pid); err == nil {
			return cg, 0, "cgroup"
		} else {
			m.log.Warn("cgroup files not found, using engine stats", slog.String("id", id[:12]), slog.Any("err", err))
		}
	}
	return &engineReader{ctx: ctx, eng: m.eng, id: id}, engineInterval, "engine"
}

// engineReader takes one-shot stats from the engine.
type engineReader struct {
	ctx context.Context
	eng Engine
	id  string
}

func (e *engineReader) Read() (Counters, error) {
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	res, err := e.eng.ContainerStats(ctx, e.id, client.ContainerStatsOptions{})
	if err != nil {
		return Counters{}, err
	}
	defer res.Body.Close()
	var s container.StatsResponse
	if err := json.NewDecoder(res.Body).Decode(&s); err != nil {
		return Counters{}, err
	}
	if s.Read.IsZero() || s.CPUStats.CPUUsage.TotalUsage == 0 && s.PidsStats.Current == 0 {
		return Counters{}, errors.New("container is not running")
	}
	c := countersFromEngine(s)
	if c.At.IsZero() {
		c.At = time.Now()
	}
	return c, nil
}

// followLogs reads the workload's JSON lines and keeps its latest progress
// and final summary on the lane.
func (m *Manager) followLogs(ctx context.Context, r *Run, rt *laneRT, id string, stderr *bytes.Buffer) {
	logs, err := m.eng.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: true})
	if err != nil {
		return
	}
	defer logs.Close()
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, &limitedWriter{buf: stderr, max: 4096}, logs)
		pw.CloseWithError(err)
	}()
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		var line workload.Line
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			continue
		}
		r.mu.Lock()
		if line.Final {
			rt.summary = &line
			rt.done = line.Done
		} else {
			rt.rate, rt.done, rt.reported = line.Rate, line.Done, true
			rt.latency, rt.failures = line.Latency, line.Failures
			rt.iops = line.IOPS
		}
		r.mu.Unlock()
	}
	_ = pr.Close()
}

// limitedWriter keeps the first max bytes written to it.
type limitedWriter struct {
	buf *bytes.Buffer
	max int
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	if room := w.max - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// sample reads every running lane each interval and publishes one batch.
// It is the only reader of the lanes' counters, whatever the number of
// viewers.
func (m *Manager) sample(ctx context.Context, r *Run) {
	t := time.NewTicker(m.opts.Interval)
	defer t.Stop()
	type job struct {
		i  int
		rd reader
	}
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			var jobs []job
			r.mu.Lock()
			for i, l := range r.lanes {
				if l.reader != nil && now.Sub(l.lastRead) >= l.every-m.opts.Interval/2 {
					jobs = append(jobs, job{i, l.reader})
				}
			}
			r.mu.Unlock()
			// Read outside the lock. Cgroup files are read in turn, in
			// well under a millisecond each; engine stats calls, which can
			// take a second, all at once.
			counters := make([]Counters, len(jobs))
			errs := make([]error, len(jobs))
			var reads sync.WaitGroup
			for k, j := range jobs {
				if _, slow := j.rd.(*engineReader); !slow {
					counters[k], errs[k] = j.rd.Read()
					continue
				}
				reads.Add(1)
				go func() {
					defer reads.Done()
					counters[k], errs[k] = j.rd.Read()
				}()
			}
			reads.Wait()
			var batch []Sample
			r.mu.Lock()
			for k, j := range jobs {
				l := r.lanes[j.i]
				if errs[k] != nil || l.reader != j.rd {
					continue // the lane ended meanwhile
				}
				c := counters[k]
				if l.hasPrev {
					s := MakeSample(j.i, c.At.Sub(r.start).Seconds(), l.prev, c)
					s.Throughput, s.IOPS = l.rate, l.iops
					if l.latency != nil {
						s.LatencyMs, s.Failures = l.latency, l.failures
						l.latency = nil // each interval's latency goes out once
					}
					batch = append(batch, s)
					l.samples = append(l.samples, experiments.CoreSample{T: s.T, DT: s.DT, Cores: s.CPU})
					if r.view.PhaseBounds != nil && l.reported {
						// Phase means count only samples after the
						// workload's first report of its rate.
						l.phased = append(l.phased, s)
					}
				}
				l.prev, l.hasPrev, l.lastRead = c, true, c.At
			}
			r.mu.Unlock()
			if len(batch) > 0 {
				r.publish(Message{Type: "samples", Samples: batch, SentUs: time.Now().UnixMicro()})
			}
		}
	}
}
