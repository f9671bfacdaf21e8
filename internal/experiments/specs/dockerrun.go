package specs

import (
	"fmt"
	"strconv"
	"strings"
)

// Flag is one docker run limit flag, without its dashes.
type Flag struct{ Name, Value string }

// Flags are the limits in r as docker run flags, in the CLI's syntax, in the
// order the builder lists them; unset limits are left out.
func (r Resources) Flags() []Flag {
	var fs []Flag
	add := func(name string, set bool, v string) {
		if set {
			fs = append(fs, Flag{name, v})
		}
	}
	add("cpus", r.NanoCPUs > 0, strconv.FormatFloat(float64(r.NanoCPUs)/1e9, 'f', -1, 64))
	add("cpu-shares", r.CPUShares > 0, strconv.FormatInt(r.CPUShares, 10))
	add("cpuset-cpus", r.CpusetCpus != "", r.CpusetCpus)
	add("cpu-period", r.CPUPeriod > 0, strconv.FormatInt(r.CPUPeriod, 10))
	add("cpu-quota", r.CPUQuota > 0, strconv.FormatInt(r.CPUQuota, 10))
	add("memory", r.Memory > 0, FormatBytes(r.Memory))
	add("memory-swap", r.MemorySwap != 0, FormatBytes(r.MemorySwap))
	add("memory-reservation", r.MemoryReservation > 0, FormatBytes(r.MemoryReservation))
	add("pids-limit", r.PidsLimit > 0, strconv.FormatInt(r.PidsLimit, 10))
	dev := func(name string, d DeviceRate, bytes bool) {
		v := strconv.FormatUint(d.Rate, 10)
		if bytes {
			v = FormatBytes(int64(d.Rate))
		}
		add(name, d.Path != "", d.Path+":"+v)
	}
	dev("device-read-bps", r.ReadBps, true)
	dev("device-write-bps", r.WriteBps, true)
	dev("device-read-iops", r.ReadIOps, false)
	dev("device-write-iops", r.WriteIOps, false)
	add("blkio-weight", r.BlkioWeight > 0, strconv.FormatUint(uint64(r.BlkioWeight), 10))
	dev("blkio-weight-device", r.BlkioWeightDevice, false)
	return fs
}

// DockerRun renders the docker CLI command that starts the same container as
// a lane, with the limits in res (which should be the ones the engine
// reports it applied, not the ones asked for), the hardening Limit Lab
// applies, and the workload's own arguments. network is the lane's network
// mode, "none" if empty.
func DockerRun(image string, w Workload, res Resources, network string) string {
	if network == "" {
		network = "none"
	}
	args := []string{"docker", "run", "--rm",
		"--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--network", network}
	for _, f := range res.Flags() {
		args = append(args, "--"+f.Name, f.Value)
	}
	args = append(args, image)
	args = append(args, w.Args()...)
	for i, a := range args {
		args[i] = shellQuote(a)
	}
	text := strings.Join(args, " ")
	if b := res.CPUBurstUs; b > 0 {
		text += fmt.Sprintf("  # with cpu.cfs_burst_us %d (cpu.max.burst on cgroup v2) written into its cgroup: Docker has no flag for a CFS burst (moby/moby#44204)", b)
	}
	if b := res.MemoryHigh; b > 0 {
		text += fmt.Sprintf("  # with memory.high %d written into its cgroup: Docker has no flag for it (--memory-reservation sets memory.low, moby/moby#49599)", b)
	}
	return text
}

// DockerUpdate renders the docker CLI command that applies a live change to
// a container.
func DockerUpdate(container string, change Resources) string {
	args := []string{"docker", "update"}
	for _, f := range change.Flags() {
		args = append(args, "--"+f.Name, shellQuote(f.Value))
	}
	return strings.Join(append(args, shellQuote(container)), " ")
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

// Check says whether r could have come from this package's validation:
// what a file claims the engine applied is shown, and becomes a command
// to copy, only if it passes.
func (r Resources) Check() error {
	if r.NanoCPUs < 0 || r.CPUShares < 0 || r.CPUPeriod < 0 || r.CPUQuota < 0 || r.Memory < 0 || r.MemorySwap < -1 ||
		r.MemoryReservation < 0 || r.PidsLimit < -1 {
		return fmt.Errorf("a negative limit")
	}
	if r.CpusetCpus != "" {
		if _, err := ParseCPUSet(r.CpusetCpus); err != nil {
			return err
		}
	}
	for _, d := range []DeviceRate{r.ReadBps, r.WriteBps, r.ReadIOps, r.WriteIOps, r.BlkioWeightDevice} {
		if d.Path != "" && !CleanDevicePath(d.Path) {
			return fmt.Errorf("device path %q", d.Path)
		}
	}
	return nil
}
