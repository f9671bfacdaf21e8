package specs

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// validateLane checks lane i of a run of mode and duration: its name
// (unique among those seen so far), workload, limits or resources, and
// phases.
func validateLane(i int, lane Lane, mode Mode, duration time.Duration, host Host, seen map[string]int) (PlannedLane, Errors) {
	var errs Errors
	add := func(lane int, field, format string, args ...any) {
		errs = append(errs, FieldError{Lane: lane, Field: field, Message: fmt.Sprintf(format, args...)})
	}
	name := strings.TrimSpace(lane.Name)
	if name == "" {
		name = "lane " + strconv.Itoa(i+1)
	}
	if len(name) > 64 {
		add(i, "name", "at most 64 characters")
	}
	if j, dup := seen[name]; dup {
		add(i, "name", "%q is already the name of lane %d", name, j)
	}
	seen[name] = i
	w, werrs := validateWorkload(lane.Workload)
	for _, e := range werrs {
		add(i, e.Field, "%s", e.Message)
	}
	if e := checkAllowed(i, w, host); e != nil {
		errs = append(errs, *e)
	}
	res, pod, lerrs := ResolveLane(lane, w, host)
	for _, e := range lerrs {
		add(i, e.Field, "%s", e.Message)
	}
	if lane.CPUBurst != "" {
		us, why := cpuBurst(lane.CPUBurst, res, host)
		if why != "" {
			add(i, "cpu_burst", "%s", why)
		}
		res.CPUBurstUs = us
	}
	if lane.MemoryHigh != "" {
		b, why := memoryHigh(lane.MemoryHigh, res, host)
		if why != "" {
			add(i, "memory_high", "%s", why)
		}
		res.MemoryHigh = b
	}
	pl := PlannedLane{Name: name, Workload: w, Resources: res, Pod: pod, Target: -1}
	for _, at := range []struct {
		field, v string
		out      *time.Duration
	}{{"start_at", lane.StartAt, &pl.StartAt}, {"stop_at", lane.StopAt, &pl.StopAt}} {
		if at.v == "" {
			continue
		}
		d, err := time.ParseDuration(at.v)
		switch {
		case err != nil:
			add(i, at.field, "invalid offset %q: want e.g. \"10s\"", at.v)
		case d <= 0 || d >= duration:
			add(i, at.field, "must be after the run's start and before its end (%s), got %s", duration, d)
		case mode == Sequential:
			add(i, at.field, "phases need the parallel mode: in a sequential run lanes follow each other")
		default:
			*at.out = d
		}
	}
	if pl.StopAt > 0 && pl.StopAt <= pl.StartAt {
		add(i, "stop_at", "must come after start_at (%s), got %s", pl.StartAt, pl.StopAt)
	}
	return pl, errs
}

// ResolveLane resolves a lane's limits, written as Docker flags or as
// Kubernetes resources, for the host's kind of engine.
func ResolveLane(lane Lane, w Workload, host Host) (Resources, *Pod, Errors) {
	if lane.Resources != nil {
		if lane.Limits != (Limits{}) {
			return Resources{}, nil, Errors{{Field: "resources", Message: "give Docker flags (limits) or Kubernetes resources, not both"}}
		}
		p, errs := ResolvePod(*lane.Resources, host)
		if w.Kind == KindMem && p.LimitMemory == 0 && len(errs) == 0 {
			errs = append(errs, FieldError{Field: "resources.limits.memory", Message: "a mem lane needs a memory limit in its resources"})
		}
		p.defaultMemory(host.DefaultMemory)
		return p.Resources(), &p, errs
	}
	res, errs := ResolveLimits(lane.Limits, host)
	if len(errs) > 0 {
		return res, nil, errs
	}
	if w.Kind == KindMem && res.Memory == 0 {
		// A mem lane without --memory would take what it asks of the
		// host: it gets a limit a little above its own size.
		res.Memory = int64(w.MB)<<20 + MemHeadroom
	}
	if !host.Kubernetes {
		if res.Memory == 0 && host.DefaultMemory > 0 {
			// No lane takes what it likes of the host: the server's
			// default, or the reservation it asks for if that is more.
			res.Memory = max(host.DefaultMemory, res.MemoryReservation)
		}
		return res, nil, nil
	}
	p, errs := PodOf(res)
	p.defaultMemory(host.DefaultMemory)
	// What the pod's cgroup gets, which the model predicts from: no
	// request is the 2 shares of a BestEffort pod, not Docker's 1024.
	return p.Resources(), &p, errs
}
