package engine

import (
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
)

// Counters are a container's cumulative resource counters at one instant,
// whichever way they were read (cgroup v1 or v2 files, or the engine's stats
// endpoint). Sample turns two of them into rates.
type Counters struct {
	At time.Time
	// CPU time in nanoseconds: total, and split into user and system.
	CPUNs, UserNs, SysNs uint64
	// CFS bandwidth control: enforcement periods, periods in which the
	// group was throttled, and total throttled time.
	Periods, ThrottledPeriods, ThrottledNs uint64
	// The same periods of the pod's cgroup, above a pod's container's
	// (OuterPeriods is 0 elsewhere): each level counts its own, from
	// moments of its own, so a share is taken from one level's pair.
	OuterPeriods, OuterThrottledPeriods uint64
	// Memory as the docker CLI shows it: usage minus inactive file cache.
	MemBytes, MemLimit uint64
	// Block IO bytes and operations, summed over devices.
	ReadBytes, WriteBytes, ReadOps, WriteOps uint64
	Pids                                     uint64
	// Pressure stall information (PSI, cgroup v2's cpu.pressure,
	// memory.pressure and io.pressure): microseconds in which some task of
	// the group waited for a CPU, for memory (reclaim, swap-in) or for
	// block IO. HasPressure is false where the kernel does not report it
	// (cgroup v1, engine stats).
	PressureUs, MemPressureUs, IOPressureUs uint64
	HasPressure                             bool
	// RunDelayNs is how long the container's first process's threads
	// have waited, runnable, for a CPU (/proc/<pid>/task/*/schedstat),
	// where the server sees the engine's host; HasRunDelay says it was
	// read.
	RunDelayNs  uint64
	HasRunDelay bool
}

// CPUSplit is c's CPU time in user and system mode, in seconds: its
// exact total, split by the ratio of the user and system counters, which
// a reader may have read up to a second before (v1's cpuacct.stat, in
// clock ticks besides).
func (c Counters) CPUSplit() (user, sys float64) {
	u, s := float64(c.UserNs), float64(c.SysNs)
	if c.CPUNs == 0 || u+s == 0 {
		return u / 1e9, s / 1e9
	}
	total := float64(c.CPUNs) / 1e9
	return total * u / (u + s), total * s / (u + s)
}

// Throttling is the enforcement periods and throttled periods of the level
// that was throttled more, the container's or its pod's, both from that
// level's one cpu.stat: a share of them never exceeds one.
func (c Counters) Throttling() (periods, throttled uint64) {
	return throttledPair(c.Periods, c.ThrottledPeriods, c.OuterPeriods, c.OuterThrottledPeriods)
}

func throttledPair(p, tp, op, otp uint64) (periods, throttled uint64) {
	if otp > tp && op > 0 {
		return op, otp
	}
	return p, tp
}

// ThrottledPct is the share of enforcement periods that were throttled,
// in percent, or 0 when none passed: the one formula of the samples, the
// lanes' totals and a replay's ticks.
func ThrottledPct(periods, throttled float64) float64 {
	if periods <= 0 {
		return 0
	}
	return 100 * throttled / periods
}

// Fell says whether any of c's cumulative counters is below prev's.
func (c Counters) Fell(prev Counters) bool {
	return c.CPUNs < prev.CPUNs || c.Periods < prev.Periods || c.ThrottledPeriods < prev.ThrottledPeriods || c.ThrottledNs < prev.ThrottledNs ||
		c.OuterPeriods < prev.OuterPeriods || c.OuterThrottledPeriods < prev.OuterThrottledPeriods ||
		c.ReadBytes < prev.ReadBytes || c.WriteBytes < prev.WriteBytes || c.ReadOps < prev.ReadOps || c.WriteOps < prev.WriteOps
}

// delta is b-a for counters that only grow; a counter that went backwards
// (a reset, or a different source) counts as no change.
func delta(a, b uint64) uint64 {
	if b < a {
		return 0
	}
	return b - a
}

// calculateCPUCores is CPU use in cores between two readings: the docker
// CLI's calculateCPUPercentUnix without the ×100, and over wall time rather
// than the host's CPU time, so that 1.0 is one full CPU on any host.
func calculateCPUCores(prev, cur Counters) float64 {
	dt := cur.At.Sub(prev.At)
	if dt <= 0 {
		return 0
	}
	return float64(delta(prev.CPUNs, cur.CPUNs)) / float64(dt.Nanoseconds())
}

// calculateMemUsageUnixNoCache is the docker CLI's formula: usage less the
// inactive file cache, which the kernel reclaims first. cgroup v1 reports
// it as total_inactive_file, v2 as inactive_file.
func calculateMemUsageUnixNoCache(usage uint64, stat map[string]uint64) uint64 {
	total, isCgroup1 := stat["total_inactive_file"]
	return memNoCache(usage, total, isCgroup1, stat["inactive_file"])
}

// memNoCache is calculateMemUsageUnixNoCache on the two values it reads.
func memNoCache(usage, totalInactive uint64, isCgroup1 bool, inactive uint64) uint64 {
	if isCgroup1 && totalInactive < usage {
		return usage - totalInactive
	}
	if inactive < usage {
		return usage - inactive
	}
	return usage
}

// calculateBlockIO sums block IO entries by operation, matching the op
// case-insensitively as the docker CLI does ("Read" on v1, "read" on v2).
func calculateBlockIO(entries []container.BlkioStatEntry) (read, write uint64) {
	for _, e := range entries {
		switch strings.ToLower(e.Op) {
		case "read":
			read += e.Value
		case "write":
			write += e.Value
		}
	}
	return read, write
}

// countersFromEngine converts the engine's stats response (one-shot or
// streamed) to Counters; the engine has already read the cgroup files, v1 or
// v2, on its side.
func countersFromEngine(s container.StatsResponse) Counters {
	c := Counters{
		At:               s.Read,
		CPUNs:            s.CPUStats.CPUUsage.TotalUsage,
		UserNs:           s.CPUStats.CPUUsage.UsageInUsermode,
		SysNs:            s.CPUStats.CPUUsage.UsageInKernelmode,
		Periods:          s.CPUStats.ThrottlingData.Periods,
		ThrottledPeriods: s.CPUStats.ThrottlingData.ThrottledPeriods,
		ThrottledNs:      s.CPUStats.ThrottlingData.ThrottledTime,
		MemBytes:         calculateMemUsageUnixNoCache(s.MemoryStats.Usage, s.MemoryStats.Stats),
		MemLimit:         s.MemoryStats.Limit,
		Pids:             s.PidsStats.Current,
	}
	c.ReadBytes, c.WriteBytes = calculateBlockIO(s.BlkioStats.IoServiceBytesRecursive)
	c.ReadOps, c.WriteOps = calculateBlockIO(s.BlkioStats.IoServicedRecursive)
	return c
}
