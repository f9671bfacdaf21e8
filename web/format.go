package web

import (
	"strconv"
	"strings"

	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/runner"
)

// limitsText writes a lane's limits in the CLI's flag names, compactly.
func limitsText(r experiments.Resources) string {
	var parts []string
	add := func(name, v string) { parts = append(parts, name+" "+v) }
	if r.NanoCPUs > 0 {
		add("cpus", strconv.FormatFloat(float64(r.NanoCPUs)/1e9, 'f', -1, 64))
	}
	if r.CPUShares > 0 {
		add("cpu-shares", strconv.FormatInt(r.CPUShares, 10))
	}
	if r.CpusetCpus != "" {
		add("cpuset-cpus", r.CpusetCpus)
	}
	if r.CPUQuota > 0 {
		add("cpu-quota", strconv.FormatInt(r.CPUQuota, 10))
	}
	if r.CPUPeriod > 0 {
		add("cpu-period", strconv.FormatInt(r.CPUPeriod, 10))
	}
	if r.Memory > 0 {
		add("memory", experiments.FormatBytes(r.Memory))
	}
	if r.MemorySwap != 0 {
		add("memory-swap", experiments.FormatBytes(r.MemorySwap))
	}
	if r.MemoryReservation > 0 {
		add("memory-reservation", experiments.FormatBytes(r.MemoryReservation))
	}
	if r.PidsLimit > 0 {
		add("pids-limit", strconv.FormatInt(r.PidsLimit, 10))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " · ")
}

// laneLimits shows what the engine applied, or what was asked for before
// the container exists.
func laneLimits(l runner.LaneResult) string {
	if l.Applied != nil {
		return limitsText(*l.Applied)
	}
	return limitsText(l.Requested) + " (requested)"
}

func workloadText(w experiments.Workload) string {
	args := w.Args()
	return strings.Join(args, " ")
}

func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func exitText(l runner.LaneResult) string {
	if l.ExitCode == nil {
		return "—"
	}
	return strconv.Itoa(*l.ExitCode)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func ratioText(l runner.LaneResult) string {
	if l.Ratio == 0 {
		return "—"
	}
	return f2(l.Ratio) + "×"
}

func throttledText(l runner.LaneResult) string {
	if l.Periods == 0 {
		return "—"
	}
	return strconv.FormatUint(l.ThrottledPeriods, 10) + " / " + strconv.FormatUint(l.Periods, 10)
}

func gib(n int64) string { return f1(float64(n)/(1<<30)) + " GiB" }
