package engine

// Signal names one kind of counter a sample carries.
type Signal string

const (
	SignalCPU         Signal = "cpu"             // CPU time, user and system
	SignalThrottling  Signal = "throttling"      // CFS periods and throttled time
	SignalMemory      Signal = "memory"          // usage less inactive file, and the limit
	SignalIOBytes     Signal = "io_bytes"        // block IO bytes read and written
	SignalIOOps       Signal = "io_ops"          // block IO requests
	SignalPIDs        Signal = "pids"            // processes and threads
	SignalCPUPressure Signal = "cpu_pressure"    // PSI: time some task waited for a CPU
	SignalMemPressure Signal = "memory_pressure" // PSI: time some task waited for memory
	SignalIOPressure  Signal = "io_pressure"     // PSI: time some task waited for block IO
)

// Missing is a signal that samples on this host lack, and why.
type Missing struct {
	Signal Signal `json:"signal"`
	Why    string `json:"why"`
}

// Sampling is what a lab loses where samples come from: the finest
// interval they come at (0: the server's own, from the cgroup files) and
// each signal missing. Measured by reading both sources on one container
// (TestEngineStatsAgainstCgroupFiles): the engine's stats carry CPU,
// throttling, memory, IO bytes and pids as the files do; on cgroup v2 they
// carry no IO operation counts, and no source but v2's files has PSI.
type Sampling struct {
	IntervalMs int64     `json:"interval_ms,omitempty"`
	Missing    []Missing `json:"missing"`
}

// Sampling is what samples on this host carry.
func (h HostInfo) Sampling() Sampling {
	var s Sampling
	if !h.ReadsCgroups() {
		s.IntervalMs = EngineInterval.Milliseconds()
	}
	psi := func(why string) {
		for _, sig := range []Signal{SignalCPUPressure, SignalMemPressure, SignalIOPressure} {
			s.Missing = append(s.Missing, Missing{sig, why})
		}
	}
	switch {
	case !h.CgroupV2():
		psi("cgroup v1 has no pressure stall information (PSI)")
	case !h.ReadsCgroups():
		s.Missing = append(s.Missing, Missing{SignalIOOps, "the engine's stats on cgroup v2 carry IO bytes but no operation counts"})
		psi("the engine's stats carry no pressure stall information (PSI); only the cgroup files do")
	}
	return s
}

// Lacks says whether samples on this host lack a signal, and why.
func (s Sampling) Lacks(sig Signal) (string, bool) {
	for _, m := range s.Missing {
		if m.Signal == sig {
			return m.Why, true
		}
	}
	return "", false
}

// LacksAny says whether samples on this host lack one of the signals
// named (a verdict's Needs): the first such, and why.
func (s Sampling) LacksAny(signals []string) (signal, why string, lacks bool) {
	for _, sig := range signals {
		if why, lacks := s.Lacks(Signal(sig)); lacks {
			return sig, why, true
		}
	}
	return "", "", false
}
