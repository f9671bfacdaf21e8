package engine

import "strconv"

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
