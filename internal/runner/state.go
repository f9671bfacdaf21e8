package runner

import (
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/workload/wire"
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
	// running, or its engine stopped answering while it ran; what was
	// recorded until then is kept.
	StateInterrupted State = "interrupted"
)

// Ended says whether a run in state s is over.
func (s State) Ended() bool { return s != StateQueued && s != StateRunning }

// LaneState is where a lane is in its life.
type LaneState string

const (
	LanePending LaneState = "pending"
	LaneRunning LaneState = "running"
	LaneExited  LaneState = "exited"
	LaneSkipped LaneState = "skipped"
	// LaneInterrupted: the lane was pending or running when the server
	// died.
	LaneInterrupted LaneState = "interrupted"
)

// Over says whether a lane in state s will run no more.
func (s LaneState) Over() bool { return s == LaneExited || s == LaneSkipped || s == LaneInterrupted }

// laneMoves are the only moves of a lane's life. A pending lane starts,
// is skipped (its run ended or was stopped before its start), or ends
// without running (its start failed); a running one exits. A pending or
// running lane is interrupted when the server died under it, as a stored
// or imported run records it. An ended lane moves no more.
var laneMoves = map[LaneState][]LaneState{
	LanePending: {LaneRunning, LaneSkipped, LaneExited, LaneInterrupted},
	LaneRunning: {LaneExited, LaneInterrupted},
}

// To is the state a lane in s is in once asked to move to next: next,
// where laneMoves allows it, else s, and whether it moved.
func (s LaneState) To(next LaneState) (LaneState, bool) {
	for _, m := range laneMoves[s] {
		if m == next {
			return next, true
		}
	}
	return s, false
}

// runState is a run's live state, guarded by Run.mu. Views are built from
// it when asked; nothing outside the package sees or changes it.
type runState struct {
	state     State
	err       string
	queuePos  int
	createdAt time.Time
	start     time.Time // when it left the queue; zero while queued
	endedAt   time.Time
	stopped   bool // asked to stop
	lanes     []*laneState
	changes   []ChangeRecord
	events    []EventRecord
	verdict   *models.Verdict
	guide     guide
	jitter    jitter // the samples' interval errors
	// host is the host's load at each tick, where it is read; quiet the
	// quiet check before the first lane was created.
	host  []HostSample
	quiet *QuietCheck
	// unsampledNs is CPU time lanes used after their last reading, as
	// they ended: the next host sample counts it as the run's.
	unsampledNs uint64
}

// laneState is one lane's live state: what it is, what the engine
// applied, what it measured, and what the sampler and the log follower
// keep between readings.
// move moves the lane to next where laneMoves allows it: the one way a
// lane's state changes, under Run.mu. It says whether it moved.
func (l *laneState) move(next LaneState) bool {
	var moved bool
	l.state, moved = l.state.To(next)
	return moved
}

type laneState struct {
	state     LaneState
	id        string // the container's full id, once created
	applied   *specs.Resources
	atStart   specs.Resources // what the engine applied at creation; applied follows live changes
	dockerRun string
	manifest  string             // a pod's YAML
	pod       *specs.Pod         // a pod's resources now: the plan's, then each resize's
	kernel    *engine.KernelView // the limits' cgroup files, read back while it runs
	warnings  []string
	source    string // where its counters come from
	err       string
	pid       int    // its container's first process, where the server sees it
	waitNs    uint64 // its threads' time waiting for a CPU, from its first to its last reading
	waitRead  bool   // waitNs was read at all (the engine's host is this machine)
	// delayNs is its threads' run delay at its last reading of it
	// (delayAt; delayRead once there is one), once a second.
	delayNs   uint64
	delayAt   time.Time
	delayRead bool

	startedAt, endedAt float64 // seconds since the run started (for a lane of a start barrier, since it let the lanes go)
	barrier            bool    // began its work with others at a start barrier
	runningAt          float64 // a barrier lane's: when the engine said it ran
	wall, user, sys    float64
	throughput, iops   float64
	exitCode           *int
	oomKilled          bool
	timedOut           bool
	// asked: a facilitator's service was asked to stop once its loads
	// had ended (stopIdleService), which is how it completes.
	asked     bool
	completed bool // ran to its end, for the model
	totals    engine.Counters
	summary   *wire.Line
	// runtimes are a runtimes lane's rounds, checked (wire.CheckRuntimeRounds).
	runtimes       []wire.RuntimeRound
	expected       *float64
	predictedCores *float64
	predictedWall  *float64
	phases         []Phase

	// The sampler's: the reader, how often it may be read, when it was
	// last asked (by this host's clock: the engine's own timestamps lag by
	// however long it took to answer), the last reading, and every
	// sample's CPU for the model.
	reader   engine.Reader
	progress *engine.ProgressReader // the workload's progress file, where the server reads it
	every    time.Duration
	lastAsk  time.Time
	lastRead time.Time
	prev     engine.Counters
	hasPrev  bool
	samples  []models.CoreSample
	phased   []engine.Sample // every sample after the first report, when the run has phases

	// The log follower's: the workload's last progress line.
	rate       float64
	reported   bool
	reportedAt time.Time // by this host's clock
	// stalledAt is when, in run seconds, the workload's reports stopped
	// coming while it ran (0 while they come).
	stalledAt float64
	liveIOPS  float64
	// gomaxprocs is the Go runtime's, as the workload last reported it.
	gomaxprocs int
	latency    *wire.Latency // this interval's, sent once
	ticked     bool          // its last reading was at a tick of the clock
	failures   int64
	done       float64
}
