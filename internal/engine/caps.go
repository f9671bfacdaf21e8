package engine

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/system"
	"golang.org/x/sys/unix"
)

// CgroupVersion is the cgroup hierarchy of an engine's host: v1, or the
// unified v2.
type CgroupVersion int

// The two hierarchies.
const (
	CgroupV1 CgroupVersion = 1
	CgroupV2 CgroupVersion = 2
)

// ParseCgroupVersion reads a version as engines and nodes report it ("1",
// "2"); an engine before API 1.40 reports none, and ran v1.
func ParseCgroupVersion(s string) CgroupVersion {
	if s == "2" {
		return CgroupV2
	}
	return CgroupV1
}

// String is the version's number, as "cgroup v%s" prints it.
func (v CgroupVersion) String() string { return strconv.Itoa(int(v)) }

// Capabilities are, for each limit a lane can ask for, whether the host
// applies it and why not: as the engine reports it, or as a probe
// container showed (block IO), or as the server can write it itself (a
// CFS burst).
type Capabilities struct {
	CPUs, CPUPeriod, CPUQuota, CPUShares, CpusetCPUs Support
	Memory, MemoryReservation, MemorySwap, PidsLimit Support
	// Block IO weights, one each way, and throttles.
	BlkioWeight, BlkioWeightDevice         Support
	ReadBps, WriteBps, ReadIOps, WriteIOps Support
	// CPUBurst is a CFS burst, and MemoryHigh cgroup v2's memory.high,
	// which Limit Lab writes into the lane's cgroup itself.
	CPUBurst, MemoryHigh Support
}

// fields are the capabilities by the names the spec's fields and the API
// give them.
func (c *Capabilities) fields() map[string]*Support {
	return map[string]*Support{
		"cpus": &c.CPUs, "cpu-period": &c.CPUPeriod, "cpu-quota": &c.CPUQuota, "cpu-shares": &c.CPUShares,
		"cpuset-cpus": &c.CpusetCPUs, "memory": &c.Memory, "memory-reservation": &c.MemoryReservation,
		"memory-swap": &c.MemorySwap, "pids-limit": &c.PidsLimit,
		"blkio-weight": &c.BlkioWeight, "blkio-weight-device": &c.BlkioWeightDevice,
		"device-read-bps": &c.ReadBps, "device-write-bps": &c.WriteBps,
		"device-read-iops": &c.ReadIOps, "device-write-iops": &c.WriteIOps,
		"cpu_burst": &c.CPUBurst, "memory_high": &c.MemoryHigh,
	}
}

// ByField is each capability under its spec field's name, for the API and
// for validation, which name fields so.
func (c Capabilities) ByField() map[string]Support {
	out := map[string]Support{}
	for name, s := range c.fields() {
		out[name] = *s
	}
	return out
}

// setIO gives weights and throttles what a probe found of them.
func (c *Capabilities) setIO(weight, throttle Support) {
	c.BlkioWeight, c.BlkioWeightDevice = weight, weight
	c.ReadBps, c.WriteBps, c.ReadIOps, c.WriteIOps = throttle, throttle, throttle, throttle
}

// limitSupport is, for each limit flag, whether the engine applies it, as
// its info says: the kernel's CFS, cpuset, memory and pids support, and
// the block IO control its warnings say it lacks.
func limitSupport(i system.Info, cgroup CgroupVersion) Capabilities {
	kernel := func(what string) string {
		return "the engine reports no kernel support for " + what + " (cgroup " + cgroup.String() + ")"
	}
	support := func(ok bool, why string) Support {
		if ok {
			return Support{Supported: true}
		}
		return Support{Reason: why}
	}
	c := Capabilities{
		CPUs:              support(i.CPUCfsQuota && i.CPUCfsPeriod, kernel("CFS bandwidth control")),
		CPUPeriod:         support(i.CPUCfsPeriod, kernel("the CFS period")),
		CPUQuota:          support(i.CPUCfsQuota, kernel("the CFS quota")),
		CPUShares:         support(i.CPUShares, kernel("CPU shares")),
		CpusetCPUs:        support(i.CPUSet, kernel("cpusets")),
		Memory:            support(i.MemoryLimit, kernel("memory limits")),
		MemoryReservation: support(i.MemoryLimit, kernel("memory limits")),
		MemorySwap:        support(i.SwapLimit, kernel("swap limits")),
		PidsLimit:         support(i.PidsLimit, kernel("pids limits")),
	}
	// The engine says what block IO control it lacks in its warnings
	// (docker info prints them), e.g. "WARNING: No blkio weight support".
	lacks := func(what string) bool {
		for _, w := range i.Warnings {
			if strings.Contains(w, "No blkio "+what+" support") {
				return true
			}
		}
		return false
	}
	io := func(what string) Support {
		return support(!lacks(what), "the engine reports no blkio "+what+" support (weights need the BFQ or CFQ I/O scheduler as the engine looks for it)")
	}
	c.BlkioWeight, c.BlkioWeightDevice = io("weight"), io("weight_device")
	c.ReadBps, c.WriteBps = io("throttle.read_bps_device"), io("throttle.write_bps_device")
	c.ReadIOps, c.WriteIOps = io("throttle.read_iops_device"), io("throttle.write_iops_device")
	return c
}

// memoryHighSupport says whether the server can give a lane a memory.high:
// no engine applies one, so the server writes it into the lane's cgroup
// itself, which it can only on cgroup v2, where the engine is local and
// its cgroup files are visible and writable here.
func memoryHighSupport(h HostInfo, visible bool) Support {
	if !h.CgroupV2() {
		return Support{Reason: "memory.high is cgroup v2's, and this host runs cgroup v1: its nearest, --memory-reservation, is a soft limit acted on only when the host runs short"}
	}
	return serverWrites(h, visible, "memory.high", "*/memory.high",
		"no memory.high under "+h.cgroupRoot+": the memory controller is not enabled for the engine's cgroups")
}

// burstSupport says whether the server can give a lane a CFS burst: no
// engine applies one, so the server writes it into the lane's cgroup
// itself, which it can only where the engine is local, its cgroup files
// are visible and writable here, and the kernel has the file (5.14+).
func burstSupport(h HostInfo, visible bool) Support {
	file := "cpu/cpu.cfs_burst_us"
	if h.CgroupV2() {
		file = "*/cpu.max.burst"
	}
	return serverWrites(h, visible, "a CFS burst", file,
		"this kernel ("+h.Kernel+") has no "+filepath.Base(file)+": a CFS burst needs Linux 5.14 or later")
}

// serverWrites says whether the server can write what (a limit no engine
// applies) into a lane's cgroup itself: the engine's cgroup files must be
// visible here, the file (a pattern under the cgroup root) there, and
// writable; missing says why when it is not there.
func serverWrites(h HostInfo, visible bool, what, file, missing string) Support {
	if !visible {
		return Support{Reason: "Limit Lab writes " + what + " into the lane's cgroup itself, and this engine's cgroup files are not visible here (" + h.StatsNote + ")"}
	}
	matches, _ := filepath.Glob(filepath.Join(h.cgroupRoot, file))
	if len(matches) == 0 {
		return Support{Reason: missing}
	}
	if err := unix.Access(matches[0], unix.W_OK); err != nil {
		return Support{Reason: "the cgroup files here are not writable (" + err.Error() + "; compose mounts them read-only): Limit Lab writes " + what + " into the lane's cgroup itself"}
	}
	return Support{Supported: true}
}
