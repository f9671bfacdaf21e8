package engine

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/moby/moby/api/types/blkiodev"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// WorkloadUser is nobody: the workload needs no identity.
const WorkloadUser = "65534:65534"

// CreateOptions builds a lane's container from validated fields only;
// nothing a client sent passes through. Every container is labelled with
// its run, unprivileged, without capabilities, on a read-only root with a
// small tmpfs, and has a pids limit. It has no network: only loopback. A
// load lane joins the network namespace of the http lane it loads
// (targetID), the run's private network, which has no address anything
// outside the run could reach and goes when the service goes.
func CreateOptions(runID string, lane int, l experiments.PlannedLane, image, targetID string) client.ContainerCreateOptions {
	var mounts []mount.Mount
	if l.Workload.Disk() {
		// A volume of the lane's own: a real filesystem on a block device
		// (the root stays read-only; tmpfs is not a block device).
		mounts = []mount.Mount{{Type: mount.TypeVolume, Source: ContainerName(runID, lane), Target: "/data"}}
	}
	r := l.Resources
	if r.PidsLimit <= 0 {
		r.PidsLimit = experiments.DefaultPidsLimit
	}
	mode := container.NetworkMode("none")
	if l.Target >= 0 && targetID != "" {
		mode = container.NetworkMode("container:" + targetID)
	}
	return client.ContainerCreateOptions{
		Name: ContainerName(runID, lane),
		Config: &container.Config{
			Image: image,
			Cmd:   l.Workload.Args(),
			User:  WorkloadUser,
			Labels: map[string]string{
				LabelRun:  runID,
				LabelLane: strconv.Itoa(lane),
			},
		},
		HostConfig: &container.HostConfig{
			NetworkMode:    mode,
			Privileged:     false,
			CapDrop:        []string{"ALL"},
			SecurityOpt:    []string{"no-new-privileges"},
			ReadonlyRootfs: true,
			Mounts:         mounts,
			Tmpfs:          map[string]string{"/tmp": "rw,noexec,nosuid,nodev,size=16m"},
			LogConfig:      container.LogConfig{Type: "json-file", Config: map[string]string{"max-size": "10m", "max-file": "1"}},
			Resources:      Resources(r),
		},
	}
}

// Resources is the Engine API's form of a lane's limits; zero fields
// are unset (and, in an update, unchanged).
func Resources(r experiments.Resources) container.Resources {
	out := container.Resources{
		NanoCPUs:          r.NanoCPUs,
		CPUShares:         r.CPUShares,
		CpusetCpus:        r.CpusetCpus,
		CPUPeriod:         r.CPUPeriod,
		CPUQuota:          r.CPUQuota,
		Memory:            r.Memory,
		MemorySwap:        r.MemorySwap,
		MemoryReservation: r.MemoryReservation,
	}
	if r.PidsLimit > 0 {
		out.PidsLimit = &r.PidsLimit
	}
	throttle := func(d experiments.DeviceRate) []*blkiodev.ThrottleDevice {
		if d.Path == "" {
			return nil
		}
		return []*blkiodev.ThrottleDevice{{Path: d.Path, Rate: d.Rate}}
	}
	out.BlkioDeviceReadBps = throttle(r.ReadBps)
	out.BlkioDeviceWriteBps = throttle(r.WriteBps)
	out.BlkioDeviceReadIOps = throttle(r.ReadIOps)
	out.BlkioDeviceWriteIOps = throttle(r.WriteIOps)
	out.BlkioWeight = r.BlkioWeight
	if d := r.BlkioWeightDevice; d.Path != "" {
		out.BlkioWeightDevice = []*blkiodev.WeightDevice{{Path: d.Path, Weight: uint16(d.Rate)}}
	}
	return out
}

func ContainerName(runID string, lane int) string { return fmt.Sprintf("limitlab-%s-%d", runID, lane) }

// Applied reads back the limits the engine applied, as inspect
// reports them: these, not the request, are what the user is shown.
func Applied(r container.Resources) experiments.Resources {
	out := experiments.Resources{
		NanoCPUs:          r.NanoCPUs,
		CPUShares:         r.CPUShares,
		CpusetCpus:        r.CpusetCpus,
		CPUPeriod:         r.CPUPeriod,
		CPUQuota:          r.CPUQuota,
		Memory:            r.Memory,
		MemorySwap:        r.MemorySwap,
		MemoryReservation: r.MemoryReservation,
	}
	if r.PidsLimit != nil {
		out.PidsLimit = *r.PidsLimit
	}
	first := func(ds []*blkiodev.ThrottleDevice) experiments.DeviceRate {
		if len(ds) == 0 || ds[0] == nil {
			return experiments.DeviceRate{}
		}
		return experiments.DeviceRate{Path: ds[0].Path, Rate: ds[0].Rate}
	}
	out.ReadBps, out.WriteBps = first(r.BlkioDeviceReadBps), first(r.BlkioDeviceWriteBps)
	out.ReadIOps, out.WriteIOps = first(r.BlkioDeviceReadIOps), first(r.BlkioDeviceWriteIOps)
	out.BlkioWeight = r.BlkioWeight
	if len(r.BlkioWeightDevice) > 0 && r.BlkioWeightDevice[0] != nil {
		out.BlkioWeightDevice = experiments.DeviceRate{Path: r.BlkioWeightDevice[0].Path, Rate: uint64(r.BlkioWeightDevice[0].Weight)}
	}
	return out
}

// Reap removes the containers that carry the run label, of every run when
// runID is empty: at start-up, the leftovers of an earlier instance; at
// shutdown, anything a run could not clean up. It returns how many it
// removed.
func Reap(ctx context.Context, eng Engine, runID string, log *slog.Logger) (int, error) {
	label := LabelRun
	if runID != "" {
		label += "=" + runID
	}
	list, err := eng.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", label),
	})
	if err != nil {
		return 0, fmt.Errorf("engine: list labelled containers: %w", err)
	}
	n := 0
	for _, c := range list.Items {
		if _, err := eng.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			log.Warn("reap: remove container", slog.String("id", c.ID[:12]), slog.Any("err", err))
			continue
		}
		n++
	}
	if n > 0 {
		log.Info("reaped leftover containers", slog.Int("count", n))
	}
	return n, nil
}
