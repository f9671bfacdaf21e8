package engine

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/moby/moby/client"
)

// Created is a lane's container as the engine made it: its id, the limits
// it applied (read back by inspect, never inferred from the request) and
// the warnings it gave.
type Created struct {
	ID       string
	Applied  specs.Resources
	Warnings []string
	// Command is the docker CLI command that makes the same container;
	// Manifest, a pod's YAML.
	Command, Manifest string
}

// CreateLane creates lane i's container (and, for a disk workload, its
// volume) and reads back what the engine applied. A failure names what the
// engine refused, in its words. On an error after the container was made,
// the returned Created still carries its id, so that it can be removed.
func CreateLane(ctx context.Context, eng Engine, instance, runID string, i int, l specs.PlannedLane, image, targetID string, opts ...LaneOption) (Created, error) {
	if l.Workload.Disk() {
		if _, err := eng.VolumeCreate(ctx, client.VolumeCreateOptions{
			Name: ContainerName(runID, i), Labels: labels(instance, runID, i),
		}); err != nil {
			return Created{}, fmt.Errorf("engine: create volume: %w", err)
		}
	}
	res, err := eng.ContainerCreate(ctx, CreateOptions(instance, runID, i, l, image, targetID, opts...))
	if err != nil {
		return Created{}, fmt.Errorf("engine: %w", err)
	}
	c := Created{ID: res.ID, Warnings: res.Warnings}
	ins, err := eng.ContainerInspect(ctx, res.ID, client.ContainerInspectOptions{})
	if err != nil {
		return c, fmt.Errorf("engine: inspect: %w", err)
	}
	c.Applied = Applied(ins.Container.HostConfig.Resources)
	return c, nil
}

// RemoveRun removes a run's containers by id, then any the engine finished
// creating after the run gave up on them (found by the run's label), then
// the volumes of its disk lanes. It logs what it could not remove.
func RemoveRun(ctx context.Context, eng Engine, runID string, ids []string, lanes []specs.PlannedLane, log *slog.Logger) {
	for _, id := range ids {
		if _, err := eng.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			log.Warn("remove container", slog.String("id", id[:min(12, len(id))]), slog.Any("err", err))
		}
	}
	if _, err := Reap(ctx, eng, runID, log); err != nil {
		log.Warn("reap", slog.Any("err", err))
	}
	for i, l := range lanes {
		if l.Workload.Disk() {
			if _, err := eng.VolumeRemove(ctx, ContainerName(runID, i), client.VolumeRemoveOptions{Force: true}); err != nil {
				log.Warn("remove volume", slog.String("name", ContainerName(runID, i)), slog.Any("err", err))
			}
		}
	}
}

// StopSignal is how a lane is asked to end: SigTerm asks (the workload
// prints its summary and exits), SigKill ends it.
type StopSignal string

// The stop signals, in the engine's words.
const (
	SigTerm StopSignal = "TERM"
	SigKill StopSignal = "KILL"
)

// SendSignal sends sig to a container, giving the engine 10 s; a container
// that has already exited is no error worth more than a debug line.
func SendSignal(eng Engine, id string, sig StopSignal, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := eng.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: string(sig)}); err != nil {
		log.Debug("signal container", slog.String("id", id[:min(12, len(id))]), slog.String("signal", string(sig)), slog.Any("err", err))
	}
}

// Resize states: a pod's in-place resize as kubelet reports it in the
// pod's conditions (PodResizePending's reasons, PodResizeInProgress), or
// done when the container's resources read back as asked.
const (
	ResizeDone       = "Done"
	ResizeInProgress = "InProgress"
	ResizeDeferred   = "Deferred"
	ResizeInfeasible = "Infeasible"
	ResizeError      = "Error" // kubelet tried and failed
)

// Resized is what a pod lane's in-place resize came to: kubelet's state
// of it and its message, the container's resources as its status reports
// them applied, its restarts, and the kubectl command that asks the same.
type Resized struct {
	State    string
	Message  string
	Applied  specs.Pod
	Restarts int32
	Command  string
}
