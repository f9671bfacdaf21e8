package sampler

import (
	"time"

	"github.com/limitlab/limitlab/internal/engine"
)

// wireCounters are a container's counters as they cross the network
// between `limitlab sampler` and the dashboard, two binaries deployed
// apart: the field names are this protocol's, fixed by their tags, so
// that renaming a Go field of engine.Counters cannot silently break a
// remote sampler. Both ends convert through toWire and fromWire, and the
// round-trip test covers every field.
type wireCounters struct {
	At               time.Time `json:"at"`
	CPUNs            uint64    `json:"cpu_ns"`
	UserNs           uint64    `json:"user_ns"`
	SysNs            uint64    `json:"sys_ns"`
	Periods          uint64    `json:"periods"`
	ThrottledPeriods uint64    `json:"throttled_periods"`
	ThrottledNs      uint64    `json:"throttled_ns"`
	OuterPeriods     uint64    `json:"outer_periods,omitempty"`
	OuterThrottled   uint64    `json:"outer_throttled_periods,omitempty"`
	MemBytes         uint64    `json:"mem_bytes"`
	MemLimit         uint64    `json:"mem_limit"`
	ReadBytes        uint64    `json:"read_bytes"`
	WriteBytes       uint64    `json:"write_bytes"`
	ReadOps          uint64    `json:"read_ops"`
	WriteOps         uint64    `json:"write_ops"`
	Pids             uint64    `json:"pids"`
	PressureUs       uint64    `json:"cpu_pressure_us"`
	MemPressureUs    uint64    `json:"memory_pressure_us"`
	IOPressureUs     uint64    `json:"io_pressure_us"`
	HasPressure      bool      `json:"has_pressure"`
	RunDelayNs       uint64    `json:"run_delay_ns"`
	HasRunDelay      bool      `json:"has_run_delay"`
}

func toWire(c engine.Counters) wireCounters {
	return wireCounters{At: c.At, CPUNs: c.CPUNs, UserNs: c.UserNs, SysNs: c.SysNs, Periods: c.Periods, ThrottledPeriods: c.ThrottledPeriods,
		ThrottledNs: c.ThrottledNs, OuterPeriods: c.OuterPeriods, OuterThrottled: c.OuterThrottledPeriods, MemBytes: c.MemBytes, MemLimit: c.MemLimit, ReadBytes: c.ReadBytes, WriteBytes: c.WriteBytes,
		ReadOps: c.ReadOps, WriteOps: c.WriteOps, Pids: c.Pids, PressureUs: c.PressureUs, MemPressureUs: c.MemPressureUs,
		IOPressureUs: c.IOPressureUs, HasPressure: c.HasPressure, RunDelayNs: c.RunDelayNs, HasRunDelay: c.HasRunDelay}
}

func fromWire(w wireCounters) engine.Counters {
	return engine.Counters{At: w.At, CPUNs: w.CPUNs, UserNs: w.UserNs, SysNs: w.SysNs, Periods: w.Periods, ThrottledPeriods: w.ThrottledPeriods,
		ThrottledNs: w.ThrottledNs, OuterPeriods: w.OuterPeriods, OuterThrottledPeriods: w.OuterThrottled, MemBytes: w.MemBytes, MemLimit: w.MemLimit, ReadBytes: w.ReadBytes, WriteBytes: w.WriteBytes,
		ReadOps: w.ReadOps, WriteOps: w.WriteOps, Pids: w.Pids, PressureUs: w.PressureUs, MemPressureUs: w.MemPressureUs,
		IOPressureUs: w.IOPressureUs, HasPressure: w.HasPressure, RunDelayNs: w.RunDelayNs, HasRunDelay: w.HasRunDelay}
}
