package runner

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// Backend is what a run asks of the engine its lanes run on: Docker
// (engine.Docker, on a real or the fake engine) or Kubernetes
// (kube.Pods). Everything else about a run (its order and phases, its
// samples, its verdict) is the runner's, whatever the backend.
type Backend interface {
	// Create makes lane's container or pod ready to start and reports
	// what was applied.
	Create(ctx context.Context, lane engine.NewLane) (engine.Created, error)
	// Wait arms a wait for the lane's exit, before Start; the channel
	// gets one Exit.
	Wait(ctx context.Context, id string) <-chan engine.Exit
	// Start starts the lane and returns its main process's pid on the
	// host (0 when the server cannot see it).
	Start(ctx context.Context, id string) (pid int, err error)
	// Logs copies the lane's output until it ends or ctx does.
	Logs(ctx context.Context, id string, stdout, stderr io.Writer) error
	// Signal asks the lane to stop (engine.SigTerm) or ends it
	// (engine.SigKill).
	Signal(id string, sig engine.StopSignal, log *slog.Logger)
	// Remove removes a run's lanes, even those it lost track of, by its
	// label.
	Remove(ctx context.Context, runID string, ids []string, lanes []specs.PlannedLane, log *slog.Logger)
	// OpenReader opens a started lane's counters: the reader, how often
	// it may be read (0: every tick) and where they come from.
	OpenReader(ctx context.Context, h engine.HostInfo, id string, pid int, log *slog.Logger) (engine.Reader, time.Duration, string)
	// Alive says whether the engine still answers.
	Alive(ctx context.Context) error
}

// backend is the run's backend: Env.Backend, or the Docker Engine of
// Env.Engine.
func (e *Env) backend() Backend {
	if e.Backend != nil {
		return e.Backend
	}
	return engine.Docker{Engine: e.Engine}
}
