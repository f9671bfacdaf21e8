package experiments

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/docker/go-units"
)

// ResolveLimits parses and checks one lane's limits. Errors carry only the
// field (Lane is left for the caller).
func ResolveLimits(l Limits, host Host) (Resources, Errors) {
	var r Resources
	var errs Errors
	add := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	supported := func(field string, v Value) bool {
		if v == "" {
			return false
		}
		if len(v) > maxValueLen {
			// Refused before any parsing: nothing a limit means is longer.
			add(field, "at most %d characters, got %d", maxValueLen, len(v))
			return false
		}
		if why, no := host.Unsupported[field]; no {
			add(field, "this host cannot apply %s: %s", field, why)
			return false
		}
		return true
	}

	if supported("cpus", l.CPUs) {
		n, err := parseNanoCPUs(string(l.CPUs))
		switch {
		case err != nil:
			add("cpus", "invalid argument %q for \"--cpus\" flag: %v", l.CPUs, err)
		case n < 1e7 || (host.NCPU > 0 && n > int64(host.NCPU)*1e9):
			// The engine's words (daemon_unix.go), with its 0.01 floor.
			add("cpus", "Range of CPUs is from 0.01 to %d.00, as there are only %d CPUs available", host.NCPU, host.NCPU)
		default:
			r.NanoCPUs = n
		}
	}
	if supported("cpu-shares", l.CPUShares) {
		n, err := strconv.ParseInt(string(l.CPUShares), 10, 64)
		switch {
		case err != nil:
			add("cpu-shares", "invalid argument %q for \"--cpu-shares\" flag: want a whole number", l.CPUShares)
		case n < 2 || n > 262144:
			// The kernel clamps to this range (sched_prio_to_weight); the
			// engine would silently pass it on, which would mislead a lab.
			add("cpu-shares", "must be from 2 to 262144 (the kernel's range), got %d", n)
		default:
			r.CPUShares = n
		}
	}
	if supported("cpu-period", l.CPUPeriod) {
		n, err := strconv.ParseInt(string(l.CPUPeriod), 10, 64)
		switch {
		case err != nil:
			add("cpu-period", "invalid argument %q for \"--cpu-period\" flag: want microseconds as a whole number", l.CPUPeriod)
		case n < 1000 || n > 1000000:
			add("cpu-period", "CPU cfs period can not be less than 1ms (i.e. 1000) or larger than 1s (i.e. 1000000)")
		default:
			r.CPUPeriod = n
		}
	}
	if supported("cpu-quota", l.CPUQuota) {
		n, err := strconv.ParseInt(string(l.CPUQuota), 10, 64)
		switch {
		case err != nil:
			add("cpu-quota", "invalid argument %q for \"--cpu-quota\" flag: want microseconds as a whole number", l.CPUQuota)
		case n < 1000:
			add("cpu-quota", "CPU cfs quota can not be less than 1ms (i.e. 1000)")
		case host.NCPU > 0 && n > int64(host.NCPU)*1000000:
			// More than every CPU for a whole 1 s period is no limit at
			// all; the kernel would take it, a lab would mislead.
			add("cpu-quota", "must be at most %d (%d CPUs for a whole 1 s period), got %d", host.NCPU*1000000, host.NCPU, n)
		default:
			r.CPUQuota = n
		}
	}
	if l.CPUs != "" && l.CPUPeriod != "" {
		add("cpus", "Conflicting options: Nano CPUs and CPU Period cannot both be set")
	}
	if l.CPUs != "" && l.CPUQuota != "" {
		add("cpus", "Conflicting options: Nano CPUs and CPU Quota cannot both be set")
	}
	if supported("cpuset-cpus", l.CpusetCpus) {
		cpus, err := ParseCPUSet(string(l.CpusetCpus))
		if err != nil {
			add("cpuset-cpus", "Invalid value %s for cpuset cpus", l.CpusetCpus)
		} else if host.NCPU > 0 && cpus[len(cpus)-1] >= host.NCPU {
			add("cpuset-cpus", "Requested CPUs are not available - requested %s, available: 0-%d", l.CpusetCpus, host.NCPU-1)
		} else {
			r.CpusetCpus = string(l.CpusetCpus)
		}
	}
	if supported("memory", l.Memory) {
		n, err := units.RAMInBytes(string(l.Memory))
		switch {
		case err != nil:
			add("memory", "invalid argument %q for \"-m, --memory\" flag: %v", l.Memory, err)
		case n < minMemory:
			add("memory", "Minimum memory limit allowed is 6MB")
		default:
			r.Memory = n
		}
	}
	if supported("memory-reservation", l.MemoryReservation) {
		n, err := units.RAMInBytes(string(l.MemoryReservation))
		switch {
		case err != nil:
			add("memory-reservation", "invalid argument %q for \"--memory-reservation\" flag: %v", l.MemoryReservation, err)
		case n < minMemory:
			add("memory-reservation", "Minimum memory reservation allowed is 6MB")
		case r.Memory > 0 && n > r.Memory:
			add("memory-reservation", "Minimum memory limit can not be less than memory reservation limit, see usage")
		default:
			r.MemoryReservation = n
		}
	}
	if supported("memory-swap", l.MemorySwap) {
		var n int64
		var err error
		if l.MemorySwap == "-1" {
			n = -1
		} else {
			n, err = units.RAMInBytes(string(l.MemorySwap))
		}
		switch {
		case err != nil:
			add("memory-swap", "invalid argument %q for \"--memory-swap\" flag: %v", l.MemorySwap, err)
		case l.Memory == "":
			add("memory-swap", "You should always set the Memory limit when using Memoryswap limit, see usage")
		case n != -1 && r.Memory > 0 && n < r.Memory:
			add("memory-swap", "Minimum memoryswap limit should be larger than memory limit, see usage")
		default:
			r.MemorySwap = n
		}
	}
	device := func(field, dev string) (string, bool) {
		if dev == "auto" {
			if host.DataRootDevice == "" {
				add(field, "the device auto (the disk under the engine's data root) is unknown on this host: name the device")
				return "", false
			}
			return host.DataRootDevice, true
		}
		if !cleanDevicePath(dev) {
			add(field, "bad format for device path: %s (want a clean path under /dev/)", dev)
			return "", false
		}
		if host.DeviceExists != nil && !host.DeviceExists(dev) {
			add(field, "no such device on the engine's host: %s", dev)
			return "", false
		}
		return dev, true
	}
	throttle := func(field string, v Value, bytes bool, out *DeviceRate) {
		if !supported(field, v) {
			return
		}
		dev, rateText, ok := strings.Cut(string(v), ":")
		if !ok || dev == "" {
			add(field, "bad format: %s: want <device-path>:<rate>, e.g. /dev/sda:5mb or auto:5mb", v)
			return
		}
		var rate int64
		var err error
		if bytes {
			rate, err = units.RAMInBytes(rateText)
		} else {
			var n uint64
			n, err = strconv.ParseUint(rateText, 10, 64)
			rate = int64(n)
		}
		if err != nil || rate <= 0 {
			if bytes {
				add(field, "invalid rate for device: %s. The correct format is <device-path>:<number>[<unit>]. Number must be a positive integer. Unit is optional and can be kb, mb, or gb", v)
			} else {
				add(field, "invalid rate for device: %s. The correct format is <device-path>:<number>. Number must be a positive integer", v)
			}
			return
		}
		if path, ok := device(field, dev); ok {
			*out = DeviceRate{Path: path, Rate: uint64(rate)}
		}
	}
	throttle("device-read-bps", l.DeviceReadBps, true, &r.ReadBps)
	throttle("device-write-bps", l.DeviceWriteBps, true, &r.WriteBps)
	throttle("device-read-iops", l.DeviceReadIOps, false, &r.ReadIOps)
	throttle("device-write-iops", l.DeviceWriteIOps, false, &r.WriteIOps)
	if supported("blkio-weight", l.BlkioWeight) {
		n, err := strconv.ParseUint(string(l.BlkioWeight), 10, 16)
		if err != nil || n < 10 || n > 1000 {
			add("blkio-weight", "Range of blkio weight is from 10 to 1000")
		} else {
			r.BlkioWeight = uint16(n)
		}
	}
	if supported("blkio-weight-device", l.BlkioWeightDevice) {
		dev, w, ok := strings.Cut(string(l.BlkioWeightDevice), ":")
		n, err := strconv.ParseUint(w, 10, 16)
		switch {
		case !ok || dev == "":
			add("blkio-weight-device", "bad format: %s: want <device-path>:<weight>", l.BlkioWeightDevice)
		case err != nil || n < 10 || n > 1000:
			add("blkio-weight-device", "invalid weight for device: %s", l.BlkioWeightDevice)
		default:
			if path, ok := device("blkio-weight-device", dev); ok {
				r.BlkioWeightDevice = DeviceRate{Path: path, Rate: n}
			}
		}
	}
	r.PidsLimit = DefaultPidsLimit
	if supported("pids-limit", l.PidsLimit) {
		n, err := strconv.ParseInt(string(l.PidsLimit), 10, 64)
		switch {
		case err != nil:
			add("pids-limit", "invalid argument %q for \"--pids-limit\" flag: want a whole number", l.PidsLimit)
		case n < 1 || n > MaxPidsLimit:
			// Unlimited (0 or -1) is refused on purpose: see DefaultPidsLimit.
			add("pids-limit", "must be from 1 to %d, got %d", MaxPidsLimit, n)
		default:
			r.PidsLimit = n
		}
	}
	return r, errs
}

// maxValueLen bounds every limit's text: the longest meaningful one is a
// device path with a rate.
const maxValueLen = 64

// parseNanoCPUs parses --cpus in billionths of a CPU, no finer. The docker
// CLI (opts.NanoCPUs) takes any rational big.Rat parses, including
// exponents and fractions, whose parsing can cost a server seconds of CPU
// ("1e999999"); this takes only what a person types: a plain decimal, at
// most six digits before the point and nine after.
func parseNanoCPUs(s string) (int64, error) {
	whole, frac, _ := strings.Cut(s, ".")
	digits := func(d string, most int) bool {
		if len(d) > most {
			return false
		}
		for _, c := range d {
			if c < '0' || c > '9' {
				return false
			}
		}
		return true
	}
	if whole == "" && frac == "" || !digits(whole, 6) || !digits(frac, 12) {
		if strings.ContainsAny(s, "0123456789") {
			return 0, fmt.Errorf("write CPUs as a plain decimal such as 0.5 or 2: exponents, fractions, hex and more than 6 digits are not taken")
		}
		return 0, fmt.Errorf("failed to parse %v as a rational number", s)
	}
	if len(frac) > 9 && strings.Trim(frac[9:], "0") != "" {
		return 0, fmt.Errorf("value is too precise")
	}
	frac = (frac + "000000000")[:9]
	w, _ := strconv.ParseInt("0"+whole, 10, 64)
	f, _ := strconv.ParseInt(frac, 10, 64)
	return w*1e9 + f, nil
}

// ParseCPUSet parses a cpuset list such as "0-2,4" into sorted CPU numbers.
func ParseCPUSet(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty cpuset")
	}
	var set [maxCPUs]bool
	if len(s) > maxValueLen || strings.Trim(s, "0123456789,-") != "" {
		return nil, fmt.Errorf("invalid cpuset %q", s)
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("invalid cpuset %q", s)
		}
		b := a
		if isRange {
			b, err = strconv.Atoi(hi)
			if err != nil || b < a {
				return nil, fmt.Errorf("invalid cpuset %q", s)
			}
		}
		if b >= maxCPUs {
			return nil, fmt.Errorf("invalid cpuset %q", s)
		}
		for c := a; c <= b; c++ {
			set[c] = true
		}
	}
	var out []int
	for c, in := range set {
		if in {
			out = append(out, c)
		}
	}
	return out, nil
}

// maxCPUs bounds a cpuset's CPU numbers, as the kernel's NR_CPUS does.
const maxCPUs = 4096

// cleanDevicePath says whether p is a plain path under /dev: clean, short,
// and of letters, digits and / _ . - only.
func cleanDevicePath(p string) bool {
	return strings.HasPrefix(p, "/dev/") && path.Clean(p) == p && len(p) <= maxValueLen &&
		strings.Trim(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/_.-") == ""
}
