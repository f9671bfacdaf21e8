package experiments

import (
	"strconv"
	"strings"
)

// DockerRun renders the docker CLI command that starts the same container as
// a lane, with the limits in res (which should be the ones the engine
// reports it applied, not the ones asked for), the hardening Limit Lab
// applies, and the workload's own arguments.
func DockerRun(image string, w Workload, res Resources) string {
	args := []string{"docker", "run", "--rm",
		"--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--network", "none"}
	opt := func(flag, v string) { args = append(args, flag, v) }
	if res.NanoCPUs > 0 {
		opt("--cpus", strconv.FormatFloat(float64(res.NanoCPUs)/1e9, 'f', -1, 64))
	}
	if res.CPUShares > 0 {
		opt("--cpu-shares", strconv.FormatInt(res.CPUShares, 10))
	}
	if res.CpusetCpus != "" {
		opt("--cpuset-cpus", res.CpusetCpus)
	}
	if res.CPUPeriod > 0 {
		opt("--cpu-period", strconv.FormatInt(res.CPUPeriod, 10))
	}
	if res.CPUQuota > 0 {
		opt("--cpu-quota", strconv.FormatInt(res.CPUQuota, 10))
	}
	if res.Memory > 0 {
		opt("--memory", FormatBytes(res.Memory))
	}
	if res.MemorySwap != 0 {
		opt("--memory-swap", FormatBytes(res.MemorySwap))
	}
	if res.MemoryReservation > 0 {
		opt("--memory-reservation", FormatBytes(res.MemoryReservation))
	}
	if res.PidsLimit > 0 {
		opt("--pids-limit", strconv.FormatInt(res.PidsLimit, 10))
	}
	args = append(args, image)
	args = append(args, w.Args()...)
	for i, a := range args {
		args[i] = shellQuote(a)
	}
	return strings.Join(args, " ")
}

// FormatBytes writes a byte count in the docker CLI's size syntax, as short
// as it is exact: 67108864 is "64m", 1000 is "1000b"; -1 stays "-1".
func FormatBytes(n int64) string {
	if n < 0 {
		return strconv.FormatInt(n, 10)
	}
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "b"
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
