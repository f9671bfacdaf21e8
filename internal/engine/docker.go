package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// NewLane is what a lane's container or pod is made from: validated fields
// only.
type NewLane struct {
	Instance, RunID string
	Index           int
	Lane            specs.PlannedLane
	Image           string
	// TargetID is the id of the service lane a load lane loads.
	TargetID string
	// ProgressFile: the workload writes its progress to a file the server
	// reads (a local engine).
	ProgressFile bool
	// Begin: the workload waits for the start barrier's file
	// (wire.BeginPath) before its first unit of work.
	Begin bool
	// Deadline is the longest the run may last (its plan's duration): a
	// pod is ended by kubelet past it, should the server be gone.
	Deadline time.Duration
}

// Exit is how a lane ended, as its engine reports it.
type Exit struct {
	// Code is the exit code; HasCode says the engine gave one (it may
	// give one from its inspect even when the wait itself failed).
	Code      int
	HasCode   bool
	OOMKilled bool
	// Reason is the engine's word for the end ("OOMKilled", "Error"), if
	// it gives one.
	Reason                string
	StartedAt, FinishedAt time.Time
	// Err is set when the exit could not be collected.
	Err error
}

// Docker runs lanes as containers on a Docker Engine.
type Docker struct{ Engine Engine }

// Create creates the lane's container (and a disk workload's volume) and
// reads back what the engine applied.
func (d Docker) Create(ctx context.Context, nl NewLane) (Created, error) {
	c, err := CreateLane(ctx, d.Engine, nl.Instance, nl.RunID, nl.Index, nl.Lane, nl.Image, nl.TargetID, WithProgressFile(nl.ProgressFile), WithBegin(nl.Begin))
	if err == nil {
		// No engine applies a CFS burst or memory.high: the server
		// writes them once the container runs (CgroupReader), and reads
		// them back.
		c.Applied.CPUBurstUs = nl.Lane.Resources.CPUBurstUs
		c.Applied.MemoryHigh = nl.Lane.Resources.MemoryHigh
		network := ""
		if nl.Lane.Target >= 0 {
			network = "container:" + ContainerName(nl.RunID, nl.Lane.Target)
		}
		c.Command = specs.DockerRun(RepoOf(nl.Lane.Workload), nl.Lane.Workload, c.Applied, network)
	}
	return c, err
}

// Wait arms a wait for the container's next exit; it must be called before
// Start. The channel gets one Exit.
func (d Docker) Wait(ctx context.Context, id string) <-chan Exit {
	w := d.Engine.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	out := make(chan Exit, 1)
	// Lives until the engine reports the exit or ctx ends.
	go func() {
		var e Exit
		select {
		case res := <-w.Result:
			e.Code, e.HasCode = int(res.StatusCode), true
		case err := <-w.Error:
			e.Err = err
		}
		ins, err := d.Engine.ContainerInspect(context.WithoutCancel(ctx), id, client.ContainerInspectOptions{})
		if err == nil && ins.Container.State != nil {
			st := ins.Container.State
			e.OOMKilled = st.OOMKilled
			if !e.HasCode {
				e.Code, e.HasCode = st.ExitCode, true
			}
			e.StartedAt, e.FinishedAt = parseEngineTime(st.StartedAt), parseEngineTime(st.FinishedAt)
			if st.OOMKilled {
				e.Reason = "OOMKilled"
			}
		}
		out <- e
	}()
	return out
}

// Start starts the container and returns its main process's pid (0 when
// the engine does not say).
func (d Docker) Start(ctx context.Context, id string) (int, error) {
	if _, err := d.Engine.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		return 0, fmt.Errorf("engine: start: %w", err)
	}
	if ins, err := d.Engine.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); err == nil && ins.Container.State != nil {
		return ins.Container.State.Pid, nil
	}
	return 0, nil
}

// Logs copies the container's output until it ends or ctx does.
func (d Docker) Logs(ctx context.Context, id string, stdout, stderr io.Writer) error {
	logs, err := d.Engine.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: true})
	if err != nil {
		return err
	}
	defer logs.Close()
	_, err = stdcopy.StdCopy(stdout, stderr, logs)
	return err
}

// Signal sends sig to the container.
func (d Docker) Signal(id string, sig StopSignal, log *slog.Logger) {
	SendSignal(d.Engine, id, sig, log)
}

// Remove removes a run's containers and volumes.
func (d Docker) Remove(ctx context.Context, runID string, ids []string, lanes []specs.PlannedLane, log *slog.Logger) {
	RemoveRun(ctx, d.Engine, runID, ids, lanes, log)
}

// OpenReader opens the container's counters.
func (d Docker) OpenReader(ctx context.Context, h HostInfo, id string, pid int, log *slog.Logger) (Reader, time.Duration, string) {
	return OpenReader(ctx, d.Engine, h, id, pid, log)
}

// Alive says whether the engine answers.
func (d Docker) Alive(ctx context.Context) error {
	_, err := d.Engine.ServerVersion(ctx, client.ServerVersionOptions{})
	return err
}

func parseEngineTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() < 2000 {
		return time.Time{}
	}
	return t
}

// Updated is what a live change of a container's limits left: the limits
// the engine applied, read back, and its warnings.
type Updated struct {
	Applied  specs.Resources
	Warnings []string
}

// ErrUpdateRefused marks an update the engine refused, in its words; the
// container keeps the limits it had.
var ErrUpdateRefused = errors.New("engine")

// Update changes a running container's limits by delta (docker update)
// and reads back what the engine applied.
func (d Docker) Update(ctx context.Context, id string, delta specs.Resources) (Updated, error) {
	res := Resources(delta)
	upd, err := d.Engine.ContainerUpdate(ctx, id, client.ContainerUpdateOptions{Resources: &res})
	if err != nil {
		return Updated{}, fmt.Errorf("%w: %w", ErrUpdateRefused, err)
	}
	ins, err := d.Engine.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return Updated{}, fmt.Errorf("read back after the update: %w", err)
	}
	return Updated{Applied: Applied(ins.Container.HostConfig.Resources), Warnings: upd.Warnings}, nil
}

// Probe asks the engine what its host is now.
func (d Docker) Probe(ctx context.Context) (HostInfo, error) {
	return ProbeHost(ctx, d.Engine, HostProbe{})
}

// ReapRun removes what is left of a run's containers.
func (d Docker) ReapRun(ctx context.Context, runID string, log *slog.Logger) error {
	_, err := Reap(ctx, d.Engine, runID, log)
	return err
}

// Watch follows the engine's events until ctx ends.
func (d Docker) Watch(ctx context.Context, log *slog.Logger, on func(Event)) {
	Watch(ctx, d.Engine, log, on)
}

// ReapInstance removes every container a server instance made.
func (d Docker) ReapInstance(ctx context.Context, instance string, log *slog.Logger) error {
	_, err := ReapInstance(ctx, d.Engine, instance, log)
	return err
}
