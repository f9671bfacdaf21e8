package engine

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"
)

// Support says whether the host can apply a limit, and why not.
type Support struct {
	Supported bool   `json:"supported"`
	Reason    string `json:"reason,omitempty"`
}

// HostInfo is what the server knows of an engine's host: the engine, its
// cgroups, which limits it can apply (probed, each with why not), and the
// private wiring its runs are read through. ProbeHost (or KubernetesHost)
// builds it whole, and nothing changes it afterwards: a host that changes
// is probed again. It never crosses a wire itself: View builds what the
// API shows of it.
type HostInfo struct {
	// Kube is what a Kubernetes node is beyond a host (nil on Docker):
	// lanes run as its pods.
	Kube *KubernetesFacts
	// EngineVersion is the Docker Engine's version, APIVersion the API
	// version the server speaks to it, and EngineAPIVersion the newest
	// it speaks (Docker only).
	EngineVersion    string
	APIVersion       string
	EngineAPIVersion string
	OS               string
	Kernel           string
	Cgroup           CgroupVersion
	CgroupDriver     string
	NCPU             int
	MemTotal         int64
	// Caps are, for each limit, whether the host applies it; block IO
	// weights and throttles as the probe container found them.
	Caps Capabilities
	// StatsSource is "cgroup" when the server reads the containers' cgroup
	// files itself, "sampler" when a sampler on the engine's host reads
	// them, "engine" when it must ask the engine (a remote engine).
	StatsSource string
	StatsNote   string
	// Samples is what the samples carry here: their finest interval and
	// each signal they lack, and why.
	Samples  Sampling
	Warnings []string // the engine's own, as docker info prints them
	// DataRootDevice is the disk under the engine's data root (what the
	// device "auto" means).
	DataRootDevice string
	// Images are the facilitator's images the server allows, each with
	// whether the engine has it (HostProbe.Images).
	Images map[string]bool
	// RuntimesImage is the image a runtimes lane runs here (ensureRuntimes);
	// when it is empty, NoRuntimes says why.
	RuntimesImage, NoRuntimes string
	// IO is what the block IO probe container showed (probeIO); nil until
	// a probe ran.
	IO *IOProbe
	// Queue is the data root disk's request limits: larger IOs are split,
	// and IOPS throttles count the pieces.
	Queue        models.QueueLimits
	DataRootNote string
	// ProgressSource is how the workloads' progress reaches the server:
	// "file", read from each container's own tmpfs through /proc (the
	// probe container showed it can be), or "log", through the engine's
	// log stream.
	ProgressSource string
	// local is true when the server sees the engine's host: its /dev and
	// /sys.
	local bool
	// socket is a local engine's unix socket: the process that answers
	// it is dockerd (EnginePids).
	socket string
	// cgroupRoot is where the engine host's cgroup filesystem is visible,
	// dataRoot the engine's data root (its volumes are there).
	cgroupRoot string
	dataRoot   string
	// sampler reads the containers' cgroup files on a remote engine's
	// host (HostProbe.Sampler).
	sampler CgroupSource
}

// IOWeight is whether block IO weights are honoured here, and why not.
func (h HostInfo) IOWeight() Support { return h.Caps.BlkioWeight }

// IOThrottle is whether block IO throttles are applied here, and why not.
func (h HostInfo) IOThrottle() Support { return h.Caps.ReadBps }

// Progress sources.
const (
	ProgressFile = "file"
	ProgressLog  = "log"
)

// ReadsProgressFiles says whether the server reads the workloads' progress
// from files in their containers rather than from the engine's logs.
func (h HostInfo) ReadsProgressFiles() bool { return h.ProgressSource == ProgressFile }

// ReachesLanes says whether the server can write into its lanes' tmpfs
// (through /proc/<pid>/root), as a start barrier does: a local engine
// whose containers' files it sees, or a cluster node it runs on.
func (h HostInfo) ReachesLanes() bool {
	return h.ReadsProgressFiles() || h.Kubernetes() && h.local
}

// CgroupV2 says whether the engine's host runs the unified hierarchy.
func (h HostInfo) CgroupV2() bool { return h.Cgroup == CgroupV2 }

// ReadsCgroups says whether the containers' cgroup files are read, here or
// by a sampler on the engine's host, rather than the engine asked for
// stats.
func (h HostInfo) ReadsCgroups() bool {
	return h.StatsSource == StatsCgroup || h.StatsSource == StatsSampler
}

// useSampler has the containers' cgroup files read by a sampler on a
// remote engine's host: their samples then carry what the files carry, at
// the run's interval.
func (h *HostInfo) useSampler(s CgroupSource) {
	h.sampler, h.StatsSource = s, StatsSampler
	h.StatsNote = "read from the containers' cgroup files by the sampler at " + s.Address() + " on the engine's host"
	h.Samples = h.Sampling()
}

// HasPressure says whether samples carry PSI (cgroup v2's cpu.pressure),
// which only the cgroup files give.
func (h HostInfo) HasPressure() bool { return h.CgroupV2() && h.ReadsCgroups() }

// ModelHost is what the CPU allotment model needs of the host.
func (h HostInfo) ModelHost() models.ModelHost {
	return models.ModelHost{NCPU: h.NCPU, CgroupV2: h.CgroupV2()}
}

// SharesNote explains, on cgroup v2, how the engine turns --cpu-shares into
// cpu.weight; empty on v1, where shares are written as they are.
func (h HostInfo) SharesNote() string {
	if !h.CgroupV2() {
		return ""
	}
	return "This host runs cgroup v2: the engine converts --cpu-shares to cpu.weight " +
		"(1 + (shares-2)×9999/262142, so 512 : 1024 : 2048 become 20 : 39 : 79), and the model uses the converted weights."
}

// Experiments is the part of HostInfo that validation needs; the server's
// default memory is the runner's to add (runner.Env.Experiments).
func (h HostInfo) Experiments() specs.Host {
	eh := specs.Host{NCPU: h.NCPU, Unsupported: map[string]string{}, DataRootDevice: h.DataRootDevice, MemTotal: h.MemTotal,
		Kubernetes: h.Kubernetes(), Images: map[string]bool{}}
	if h.Kube != nil {
		eh.CPUManager, eh.CPUManagerNote = h.Kube.CPUManager, h.Kube.CPUManagerNote
	}
	for name, present := range h.Images {
		eh.Images[name] = present
	}
	if h.RuntimesImage == "" {
		eh.NoRuntimes = cmp.Or(h.NoRuntimes, NoRuntimesBase)
	}
	if h.local {
		eh.DeviceExists = isBlockDevice
		eh.DiskFree = FreeBytes(h.dataRoot)
	}
	for field, s := range h.Caps.ByField() {
		if !s.Supported {
			eh.Unsupported[field] = s.Reason
		}
	}
	return eh
}

// HostProbe is what ProbeHost looks for beyond the engine's own word.
type HostProbe struct {
	// CgroupRoot is where the engine host's cgroup files are visible
	// here, if they are.
	CgroupRoot string
	// Image is the workload image, whose probe container shows what block
	// IO control the lanes get (probeIO); none: the engine's word only.
	Image string
	// Images are a facilitator's images to look for (never pulled).
	Images []string
	// Sampler reads the containers' cgroup files on a remote engine's
	// host; nil if it has none.
	Sampler CgroupSource
	Log     *slog.Logger
}

// ProbeHost asks the engine what it is and what it supports, probes what
// p asks for, and decides where stats come from: the cgroup files under
// p.CgroupRoot if the engine is local and they are visible, its sampler
// if it has one, else the engine's stats endpoint. What it returns is the
// host whole.
func ProbeHost(ctx context.Context, eng Engine, p HostProbe) (HostInfo, error) {
	log := p.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h, err := engineHost(ctx, eng, p.CgroupRoot)
	if err != nil {
		return h, err
	}
	if len(p.Images) > 0 {
		h.Images = probeImages(ctx, eng, p.Images, log)
	}
	if p.Image != "" {
		probeIO(ctx, eng, &h, p.Image, log)
		h.RuntimesImage, h.NoRuntimes = ensureRuntimes(ctx, eng, p.Image, log)
	}
	if p.Sampler != nil {
		// After the IO probe, which reads its container's files here
		// when it can see them (and the workloads' progress files with
		// them).
		h.useSampler(p.Sampler)
	}
	return h, nil
}

// engineHost is the host as the engine's info and version tell it.
func engineHost(ctx context.Context, eng Engine, cgroupRoot string) (HostInfo, error) {
	info, err := eng.Info(ctx, client.InfoOptions{})
	if err != nil {
		return HostInfo{}, fmt.Errorf("engine: engine info: %w", err)
	}
	ver, err := eng.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return HostInfo{}, fmt.Errorf("engine: engine version: %w", err)
	}
	i := info.Info
	h := HostInfo{
		EngineVersion:    ver.Version,
		APIVersion:       eng.ClientVersion(),
		EngineAPIVersion: ver.APIVersion,
		OS:               i.OperatingSystem,
		Kernel:           i.KernelVersion,
		Cgroup:           ParseCgroupVersion(i.CgroupVersion),
		CgroupDriver:     i.CgroupDriver,
		NCPU:             i.NCPU,
		MemTotal:         i.MemTotal,
		Warnings:         i.Warnings,
	}
	h.Caps = limitSupport(i, h.Cgroup)
	local := strings.HasPrefix(eng.DaemonHost(), "unix://")
	h.local, h.cgroupRoot, h.dataRoot = local, cgroupRoot, i.DockerRootDir
	if local {
		h.socket = strings.TrimPrefix(eng.DaemonHost(), "unix://")
	}
	findDataRoot(&h, local, i.DockerRootDir)
	visible := fileExists(filepath.Join(cgroupRoot, "cgroup.controllers")) || fileExists(filepath.Join(cgroupRoot, "cpuacct"))
	switch {
	case local && visible:
		h.StatsSource = StatsCgroup
		h.StatsNote = "read from the containers' cgroup files under " + cgroupRoot
	case !local:
		h.StatsSource = StatsEngine
		h.StatsNote = "the engine at " + eng.DaemonHost() + " is remote: stats come from its stats endpoint, once a second"
	default:
		h.StatsSource = StatsEngine
		h.StatsNote = "no cgroup files visible under " + cgroupRoot + ": stats come from the engine's stats endpoint, once a second (mount the host's /sys/fs/cgroup read-only to read them directly)"
	}
	h.Caps.CPUBurst = burstSupport(h, local && visible)
	h.Caps.MemoryHigh = memoryHighSupport(h, local && visible)
	h.ProgressSource = ProgressLog // until a probe container shows the files can be read
	h.Samples = h.Sampling()
	if why, lacks := h.Samples.Lacks(SignalIOOps); lacks {
		h.StatsNote += "; " + why + ", so IOPS charts stay empty"
	}
	return h, nil
}

// findDataRoot finds the disk under the engine's data root, where the
// engine is local, and that disk's request limits.
func findDataRoot(h *HostInfo, local bool, root string) {
	if local {
		if dev, err := diskUnder(root); err == nil {
			h.DataRootDevice = dev
			read := func(name string) int {
				b, _ := os.ReadFile("/sys/block/" + filepath.Base(dev) + "/queue/" + name)
				n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				return n
			}
			h.Queue = models.QueueLimits{MaxSectorsKB: read("max_sectors_kb"), MaxSegments: read("max_segments")}
		} else {
			h.DataRootNote = err.Error()
		}
	} else {
		h.DataRootNote = "the engine is remote: name devices as its host knows them"
	}
}

// diskUnder finds the whole disk under a directory, through sysfs: the
// device the directory's filesystem is on, or the disk a partition belongs
// to (block IO throttles apply to whole disks).
func diskUnder(dir string) (string, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return "", fmt.Errorf("data root %s: %w", dir, err)
	}
	sys := fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	real, err := filepath.EvalSymlinks(sys)
	if err != nil {
		return "", fmt.Errorf("data root %s is on device %d:%d, which is not a block device here (overlay or a container's view)", dir, unix.Major(st.Dev), unix.Minor(st.Dev))
	}
	if fileExists(filepath.Join(real, "partition")) {
		real = filepath.Dir(real)
	}
	dev := "/dev/" + filepath.Base(real)
	if !isBlockDevice(dev) {
		return "", fmt.Errorf("data root %s is on %s, which is not visible here", dir, dev)
	}
	return dev, nil
}

func isBlockDevice(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode()&os.ModeDevice != 0 && fi.Mode()&os.ModeCharDevice == 0
}

// Describe is the host in a few words: "Docker 20.10.24, cgroup v1, 2 CPUs".
func (h HostInfo) Describe() string {
	if h.Kubernetes() {
		return describeKubernetes(h)
	}
	if h.EngineVersion == "" {
		return ""
	}
	return fmt.Sprintf("Docker %s, cgroup v%s, %d CPUs", h.EngineVersion, h.Cgroup, h.NCPU)
}

// Identity names what a host's runs depend on that can change while the
// server runs: the engine's version, the kernel, the cgroup version and
// driver, the CPUs, the memory and the data root. A pool engine whose
// identity moved since it was made ready is made ready again.
func (h HostInfo) Identity() string {
	return fmt.Sprintf("%s, kernel %s, cgroup v%s (%s), %d CPUs, %d bytes of memory, data root %s",
		platform(h), h.Kernel, h.Cgroup, h.CgroupDriver, h.NCPU, h.MemTotal, h.dataRoot)
}

// FreeBytes is the space an unprivileged writer has under dir, read now;
// 0 when it cannot be read (the engine is elsewhere, or dir is not visible
// here).
func FreeBytes(dir string) int64 {
	var st unix.Statfs_t
	if dir == "" || unix.Statfs(dir, &st) != nil {
		return 0
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// platform names what runs the lanes, with its version: Docker's, or the
// node's and its kubelet's.
func platform(h HostInfo) string {
	if h.Kubernetes() {
		return "Kubernetes node " + h.Kube.Node + " " + h.Kube.KubeletVersion
	}
	return "Docker " + h.EngineVersion
}
