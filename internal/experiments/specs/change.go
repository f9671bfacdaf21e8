package specs

import "fmt"

// LiveFields are the limits a running lane can change, through the engine's
// container update.
var LiveFields = []string{"cpus", "cpu-shares", "cpuset-cpus", "memory", "pids-limit"}

// ResolveChange checks a live change of a running lane's limits against the
// lane's current ones (cur, as applied) and returns only the fields it
// changes. A field that cannot change while a lane runs is an error, as is
// an empty change.
func ResolveChange(cur Resources, change Limits, host Host) (Resources, Errors) {
	var errs Errors
	add := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	for field, v := range map[string]Value{
		"cpu-period": change.CPUPeriod, "cpu-quota": change.CPUQuota,
		"memory-swap": change.MemorySwap, "memory-reservation": change.MemoryReservation,
	} {
		if v != "" {
			add(field, "cannot be changed while the lane runs: change one of %v, or start a new run", LiveFields)
		}
	}
	if change.Resources != nil {
		add("resources", "this lane is a container: change one of %v", LiveFields)
	}
	live := Limits{CPUs: change.CPUs, CPUShares: change.CPUShares, CpusetCpus: change.CpusetCpus, Memory: change.Memory, PidsLimit: change.PidsLimit}
	if live == (Limits{}) && len(errs) == 0 {
		add("limits", "no change: give at least one of %v", LiveFields)
	}
	r, lerrs := ResolveLimits(live, host)
	errs = append(errs, lerrs...)
	if change.PidsLimit == "" {
		r.PidsLimit = 0 // ResolveLimits fills the default; a change keeps the lane's
	}
	if r.NanoCPUs > 0 && cur.CPUQuota > 0 {
		add("cpus", "Conflicting options: Nano CPUs and CPU Quota cannot both be set")
	}
	if r.Memory > 0 && cur.MemoryReservation > r.Memory {
		add("memory", "Minimum memory limit can not be less than memory reservation limit, see usage")
	}
	if len(errs) > 0 {
		return Resources{}, errs
	}
	return r, nil
}

// Merge is cur with the fields set in change replacing its own.
func (cur Resources) Merge(change Resources) Resources {
	m := cur
	if change.NanoCPUs > 0 {
		m.NanoCPUs = change.NanoCPUs
	}
	if change.CPUShares > 0 {
		m.CPUShares = change.CPUShares
	}
	if change.CpusetCpus != "" {
		m.CpusetCpus = change.CpusetCpus
	}
	if change.Memory > 0 {
		m.Memory = change.Memory
	}
	if change.MemorySwap != 0 {
		m.MemorySwap = change.MemorySwap
	}
	if change.PidsLimit > 0 {
		m.PidsLimit = change.PidsLimit
	}
	return m
}
