package engine

import (
	"bytes"
	"encoding/json"

	"github.com/limitlab/limitlab/internal/workload/wire"
)

// MiB is the charts' unit of memory and of block IO.
const MiB = 1 << 20

// Sample is what a lane did between two readings, as the charts draw it:
// built in one place (MakeSample), in display units, every rate per
// second. The browser draws it and converts nothing.
type Sample struct {
	Lane int     `json:"lane"`
	T    float64 `json:"t"`  // seconds since the run started
	DT   float64 `json:"dt"` // seconds since this lane's previous sample
	// CPU in cores (1.0 is one CPU fully used).
	CPU float64 `json:"cpu"`
	// Memory in MiB, as the docker CLI counts it (usage less inactive
	// file cache), and the cgroup's limit (0: none).
	MemMiB      float64 `json:"mem_mib"`
	MemLimitMiB float64 `json:"mem_limit_mib,omitempty"`
	// Block IO in MiB/s, and requests per second as the cgroup counts
	// them (a large write may be split into several); IORequests is their
	// sum.
	ReadMiBs   float64 `json:"read_mib_s"`
	WriteMiBs  float64 `json:"write_mib_s"`
	ReadIOPS   float64 `json:"read_iops"`
	WriteIOPS  float64 `json:"write_iops"`
	IORequests float64 `json:"io_requests_s"`
	Pids       uint64  `json:"pids"`
	// Throttling: the CFS periods of this interval and how many were
	// throttled, their share in percent, and milliseconds throttled per
	// second.
	Periods          uint64  `json:"periods"`
	ThrottledPeriods uint64  `json:"throttled_periods"`
	ThrottledPct     float64 `json:"throttled_pct"`
	ThrottledMsPerS  float64 `json:"throttled_ms_s"`
	// Pressure stalls (PSI, cgroup v2): milliseconds per second in which
	// some task waited for a CPU, for memory or for block IO, where known.
	CPUPressure *float64 `json:"cpu_pressure_ms_s,omitempty"`
	MemPressure *float64 `json:"memory_pressure_ms_s,omitempty"`
	IOPressure  *float64 `json:"io_pressure_ms_s,omitempty"`
	// Wait is how long the lane's threads waited, runnable, for a CPU, in
	// milliseconds per second (summed over its threads), where the server
	// sees the engine's host: a lane that wanted CPU and did not get it,
	// whatever took it.
	// It is read once a second: WaitOver is the seconds it covers, on the
	// samples that carry it.
	Wait     *float64 `json:"wait_ms_s,omitempty"`
	WaitOver float64  `json:"wait_over_s,omitempty"`
	Progress
}

// Progress is what the workload itself reported of the interval: its
// throughput in its unit per second, a disk workload's operations per
// second, and a load lane's latency over its last reporting interval with
// its failed requests so far.
type Progress struct {
	Throughput float64       `json:"throughput"`
	WorkIOPS   float64       `json:"work_iops,omitempty"`
	LatencyMs  *wire.Latency `json:"latency_ms,omitempty"`
	Failures   int64         `json:"failures,omitempty"`
	// GOMAXPROCS is the workload's Go runtime's, as it last reported it.
	GOMAXPROCS int `json:"gomaxprocs,omitempty"`
	// Stalled says the workload's reports stopped coming while it ran:
	// the sample has no throughput, rather than repeating the last.
	Stalled bool `json:"stalled,omitempty"`
}

// MakeSample computes one lane's sample from two readings of its
// counters and what its workload reported.
func MakeSample(lane int, t float64, prev, cur Counters, p Progress) Sample {
	dt := cur.At.Sub(prev.At)
	perS := func(a, b uint64) float64 {
		if dt <= 0 {
			return 0
		}
		return float64(delta(a, b)) / dt.Seconds()
	}
	stall := func(a, b uint64) *float64 {
		if !prev.HasPressure || !cur.HasPressure {
			return nil
		}
		ms := perS(a, b) / 1000 // µs per second to ms per second
		return &ms
	}
	s := Sample{
		Lane: lane, T: t, DT: dt.Seconds(),
		CPU:    calculateCPUCores(prev, cur),
		MemMiB: float64(cur.MemBytes) / MiB, MemLimitMiB: float64(cur.MemLimit) / MiB,
		ReadMiBs: perS(prev.ReadBytes, cur.ReadBytes) / MiB, WriteMiBs: perS(prev.WriteBytes, cur.WriteBytes) / MiB,
		ReadIOPS: perS(prev.ReadOps, cur.ReadOps), WriteIOPS: perS(prev.WriteOps, cur.WriteOps),
		Pids:            cur.Pids,
		ThrottledMsPerS: perS(prev.ThrottledNs, cur.ThrottledNs) / 1e6,
		CPUPressure:     stall(prev.PressureUs, cur.PressureUs),
		MemPressure:     stall(prev.MemPressureUs, cur.MemPressureUs),
		IOPressure:      stall(prev.IOPressureUs, cur.IOPressureUs),
		Progress:        p,
	}
	s.IORequests = s.ReadIOPS + s.WriteIOPS
	s.Periods, s.ThrottledPeriods = throttledPair(delta(prev.Periods, cur.Periods), delta(prev.ThrottledPeriods, cur.ThrottledPeriods),
		delta(prev.OuterPeriods, cur.OuterPeriods), delta(prev.OuterThrottledPeriods, cur.OuterThrottledPeriods))
	s.ThrottledPct = ThrottledPct(float64(s.Periods), float64(s.ThrottledPeriods))
	return s
}

// MemBytes, IOBytesPerS and ThrottledMs are the sample's figures in the
// units the model and the guided checks count in.
func (s Sample) MemBytes() float64    { return s.MemMiB * MiB }
func (s Sample) IOBytesPerS() float64 { return (s.ReadMiBs + s.WriteMiBs) * MiB }
func (s Sample) ThrottledMs() float64 { return s.ThrottledMsPerS * s.DT } // in the interval

// legacySample is a sample as runs recorded before display units stored
// it: bytes, bytes per second, and milliseconds in the interval.
type legacySample struct {
	Mem           uint64   `json:"mem"`
	MemLimit      uint64   `json:"mem_limit"`
	ReadBps       *float64 `json:"read_bps"`
	WriteBps      float64  `json:"write_bps"`
	ThrottledMs   float64  `json:"throttled_ms"`
	PressureMs    *float64 `json:"pressure_ms"`
	MemPressureMs *float64 `json:"memory_pressure_ms"`
	IOPressureMs  *float64 `json:"io_pressure_ms"`
	IOPS          float64  `json:"iops"`
}

// UnmarshalJSON reads a sample, and one recorded before display units
// (which has read_bps): its figures are converted here, so that a stored
// or imported run of then draws as a run of now.
func (s *Sample) UnmarshalJSON(b []byte) error {
	type plain Sample
	if err := json.Unmarshal(b, (*plain)(s)); err != nil {
		return err
	}
	if !IsLegacySamples(b) {
		return nil
	}
	var old legacySample
	if err := json.Unmarshal(b, &old); err != nil || old.ReadBps == nil {
		return err
	}
	perS := func(ms *float64) *float64 {
		if ms == nil || s.DT <= 0 {
			return nil
		}
		v := *ms / s.DT
		return &v
	}
	s.MemMiB, s.MemLimitMiB = float64(old.Mem)/MiB, float64(old.MemLimit)/MiB
	s.ReadMiBs, s.WriteMiBs = *old.ReadBps/MiB, old.WriteBps/MiB
	s.IORequests = s.ReadIOPS + s.WriteIOPS
	if s.DT > 0 {
		s.ThrottledMsPerS = old.ThrottledMs / s.DT
	}
	s.ThrottledPct = ThrottledPct(float64(s.Periods), float64(s.ThrottledPeriods))
	s.CPUPressure, s.MemPressure, s.IOPressure = perS(old.PressureMs), perS(old.MemPressureMs), perS(old.IOPressureMs)
	s.WorkIOPS = old.IOPS
	return nil
}

// IsLegacySamples says whether a recorded message holds samples of
// before display units, to be read (UnmarshalJSON converts them) and
// written anew before a page draws them.
func IsLegacySamples(msg []byte) bool {
	return bytes.Contains(msg, legacyKey)
}

// legacyKey is a key only samples of before display units have.
var legacyKey = []byte(`"read_bps"`)
