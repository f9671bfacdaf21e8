package engine

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/workload/wire"
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
// outside the run could reach and goes when the service goes. A
// facilitator's service (specs.KindImage) runs its own image and
// command, hardened the same way; it keeps no progress file and waits at
// no barrier.
func CreateOptions(instance, runID string, lane int, l specs.PlannedLane, image, targetID string, opts ...LaneOption) client.ContainerCreateOptions {
	var o laneOptions
	for _, f := range opts {
		f(&o)
	}
	cmd := l.Workload.Args()
	if l.Workload.Kind == specs.KindImage {
		o = laneOptions{} // no progress file, no barrier
	}
	image = laneImage(l, image)
	if o.progressFile {
		cmd = append(cmd, "-progress-file", wire.ProgressPath)
	}
	if o.begin {
		cmd = append(cmd, "-begin-file", wire.BeginPath)
	}
	var mounts []mount.Mount
	if l.Workload.Disk() {
		// A volume of the lane's own: a real filesystem on a block device
		// (the root stays read-only; tmpfs is not a block device).
		mounts = []mount.Mount{{Type: mount.TypeVolume, Source: ContainerName(runID, lane), Target: "/data"}}
	}
	r := l.Resources
	if r.PidsLimit <= 0 {
		r.PidsLimit = specs.DefaultPidsLimit
	}
	mode := container.NetworkMode("none")
	if l.Target >= 0 && targetID != "" {
		mode = container.NetworkMode("container:" + targetID)
	}
	return client.ContainerCreateOptions{
		Name: ContainerName(runID, lane),
		Config: &container.Config{
			Image:  image,
			Cmd:    cmd,
			User:   WorkloadUser,
			Labels: labels(instance, runID, lane),
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

// RepoOf is the image a lane of workload w runs, as its docker run
// command names it: a facilitator's service's own, the runtimes image,
// or the workload image.
func RepoOf(w specs.Workload) string {
	switch w.Kind {
	case specs.KindRuntimes:
		return RuntimesRepo
	case specs.KindImage:
		return w.Image
	}
	return ImageRepo
}

// laneImage is the image a lane runs: a facilitator's service's own, or
// the workload image.
func laneImage(l specs.PlannedLane, workload string) string {
	if l.Workload.Kind == specs.KindImage {
		return l.Workload.Image
	}
	return workload
}

// LaneOption sets how a lane's container is made.
type LaneOption func(*laneOptions)

type laneOptions struct{ progressFile, begin bool }

// WithBegin has the workload wait for wire.BeginPath in its tmpfs before
// it begins its work: the server writes it into every lane of a start
// barrier at once.
func WithBegin(on bool) LaneOption { return func(o *laneOptions) { o.begin = on } }

// WithProgressFile has the workload keep its progress in a file of its
// container (wire.ProgressPath) for the server to read, rather than print
// it through the engine's log stream.
func WithProgressFile(on bool) LaneOption { return func(o *laneOptions) { o.progressFile = on } }

// Resources is the Engine API's form of a lane's limits; zero fields
// are unset (and, in an update, unchanged).
func Resources(r specs.Resources) container.Resources {
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
	throttle := func(d specs.DeviceRate) []*blkiodev.ThrottleDevice {
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
func Applied(r container.Resources) specs.Resources {
	out := specs.Resources{
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
	first := func(ds []*blkiodev.ThrottleDevice) specs.DeviceRate {
		if len(ds) == 0 || ds[0] == nil {
			return specs.DeviceRate{}
		}
		return specs.DeviceRate{Path: ds[0].Path, Rate: ds[0].Rate}
	}
	out.ReadBps, out.WriteBps = first(r.BlkioDeviceReadBps), first(r.BlkioDeviceWriteBps)
	out.ReadIOps, out.WriteIOps = first(r.BlkioDeviceReadIOps), first(r.BlkioDeviceWriteIOps)
	out.BlkioWeight = r.BlkioWeight
	if len(r.BlkioWeightDevice) > 0 && r.BlkioWeightDevice[0] != nil {
		out.BlkioWeightDevice = specs.DeviceRate{Path: r.BlkioWeightDevice[0].Path, Rate: uint64(r.BlkioWeightDevice[0].Weight)}
	}
	return out
}

// labels mark a lane's container and volume as the run's and the server's.
func labels(instance, runID string, lane int) map[string]string {
	l := map[string]string{LabelRun: runID, LabelLane: strconv.Itoa(lane)}
	if instance != "" {
		l[LabelInstance] = instance
	}
	return l
}

// Reap removes the containers of a run: at shutdown, anything the run could
// not clean up; at start-up, those of the runs the store says were running
// when the server died. It returns how many it removed.
func Reap(ctx context.Context, eng Engine, runID string, log *slog.Logger) (int, error) {
	if runID == "" {
		return 0, fmt.Errorf("engine: reap: no run named")
	}
	return reap(ctx, eng, LabelRun+"="+runID, log)
}

// ReapInstance removes the containers a server instance made: at
// start-up, what its previous life left. Another instance's containers on
// the same engine stay.
func ReapInstance(ctx context.Context, eng Engine, instance string, log *slog.Logger) (int, error) {
	if instance == "" {
		return 0, fmt.Errorf("engine: reap: no instance named")
	}
	return reap(ctx, eng, LabelInstance+"="+instance, log)
}

func reap(ctx context.Context, eng Engine, label string, log *slog.Logger) (int, error) {
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
		log.Info("reaped leftover containers", slog.Int("count", n), slog.String("label", label))
	}
	return n, nil
}
