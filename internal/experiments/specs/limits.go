package specs

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/docker/go-units"
)

// ResolveLimits parses and checks one lane's limits, flag by flag in the
// order of limitFlags. Errors carry only the field (Lane is left for the
// caller).
func ResolveLimits(l Limits, host Host) (Resources, Errors) {
	c := resolver{l: l, host: host, r: Resources{PidsLimit: DefaultPidsLimit}}
	if l.Resources != nil {
		c.errs = append(c.errs, FieldError{Field: "resources", Message: "Kubernetes resources change a pod lane; a container's limits are Docker flags"})
	}
	for _, f := range limitFlags {
		if f.value == nil {
			f.resolve(&c, "")
			continue
		}
		if v := f.value(l); c.supported(f.field, v) {
			f.resolve(&c, v)
		}
	}
	return c.r, c.errs
}

// limitFlag is one flag of a lane's limits: its field, where its value is
// in Limits, and how it resolves, once the value is known to be set, short
// and applied by the host. A check across flags has no value of its own.
type limitFlag struct {
	field   string
	value   func(Limits) Value
	resolve func(c *resolver, v Value)
}

// limitFlags are the flags in the order they resolve: a flag checked
// against another comes after it (--memory-reservation after --memory).
// Their messages are the engine's and the docker CLI's where they have
// one.
var limitFlags = []limitFlag{
	{"cpus", func(l Limits) Value { return l.CPUs }, func(c *resolver, v Value) {
		n, err := parseNanoCPUs(string(v))
		switch {
		case err != nil:
			c.add("cpus", "invalid argument %q for \"--cpus\" flag: %v", v, err)
		case n < 1e7 || (c.host.NCPU > 0 && n > int64(c.host.NCPU)*1e9):
			// The engine's words (daemon_unix.go), with its 0.01 floor.
			c.add("cpus", "Range of CPUs is from 0.01 to %d.00, as there are only %d CPUs available", c.host.NCPU, c.host.NCPU)
		default:
			c.r.NanoCPUs = n
		}
	}},
	{"cpu-shares", func(l Limits) Value { return l.CPUShares }, func(c *resolver, v Value) {
		// The kernel clamps to this range (sched_prio_to_weight); the
		// engine would silently pass it on, which would mislead a lab.
		c.whole("cpu-shares", v, "a whole number", func(n int64) string {
			return when(n < 2 || n > 262144, fmt.Sprintf("must be from 2 to 262144 (the kernel's range), got %d", n))
		}, &c.r.CPUShares)
	}},
	{"cpu-period", func(l Limits) Value { return l.CPUPeriod }, func(c *resolver, v Value) {
		c.whole("cpu-period", v, "microseconds as a whole number", func(n int64) string {
			return when(n < 1000 || n > 1000000, "CPU cfs period can not be less than 1ms (i.e. 1000) or larger than 1s (i.e. 1000000)")
		}, &c.r.CPUPeriod)
	}},
	{"cpu-quota", func(l Limits) Value { return l.CPUQuota }, func(c *resolver, v Value) {
		c.whole("cpu-quota", v, "microseconds as a whole number", func(n int64) string {
			if n < 1000 {
				return "CPU cfs quota can not be less than 1ms (i.e. 1000)"
			}
			// More than every CPU for a whole 1 s period is no limit at
			// all; the kernel would take it, a lab would mislead.
			return when(c.host.NCPU > 0 && n > int64(c.host.NCPU)*1000000,
				fmt.Sprintf("must be at most %d (%d CPUs for a whole 1 s period), got %d", c.host.NCPU*1000000, c.host.NCPU, n))
		}, &c.r.CPUQuota)
	}},
	{"cpus", nil, func(c *resolver, _ Value) {
		if c.l.CPUs != "" && c.l.CPUPeriod != "" {
			c.add("cpus", "Conflicting options: Nano CPUs and CPU Period cannot both be set")
		}
		if c.l.CPUs != "" && c.l.CPUQuota != "" {
			c.add("cpus", "Conflicting options: Nano CPUs and CPU Quota cannot both be set")
		}
	}},
	{"cpuset-cpus", func(l Limits) Value { return l.CpusetCpus }, func(c *resolver, v Value) {
		cpus, err := ParseCPUSet(string(v))
		switch {
		case err != nil:
			c.add("cpuset-cpus", "Invalid value %s for cpuset cpus", v)
		case c.host.NCPU > 0 && cpus[len(cpus)-1] >= c.host.NCPU:
			c.add("cpuset-cpus", "Requested CPUs are not available - requested %s, available: 0-%d", v, c.host.NCPU-1)
		default:
			c.r.CpusetCpus = string(v)
		}
	}},
	{"memory", func(l Limits) Value { return l.Memory }, func(c *resolver, v Value) {
		c.size("memory", "-m, --memory", v, func(n int64) string {
			return when(n < MinMemory, "Minimum memory limit allowed is 6MB")
		}, &c.r.Memory)
	}},
	{"memory-reservation", func(l Limits) Value { return l.MemoryReservation }, func(c *resolver, v Value) {
		c.size("memory-reservation", "--memory-reservation", v, func(n int64) string {
			if n < MinMemory {
				return "Minimum memory reservation allowed is 6MB"
			}
			return when(c.r.Memory > 0 && n > c.r.Memory, "Minimum memory limit can not be less than memory reservation limit, see usage")
		}, &c.r.MemoryReservation)
	}},
	{"memory-swap", func(l Limits) Value { return l.MemorySwap }, func(c *resolver, v Value) {
		check := func(n int64) string {
			if c.l.Memory == "" {
				return "You should always set the Memory limit when using Memoryswap limit, see usage"
			}
			return when(n != -1 && c.r.Memory > 0 && n < c.r.Memory, "Minimum memoryswap limit should be larger than memory limit, see usage")
		}
		if v == "-1" { // unlimited swap
			c.set("memory-swap", -1, check, &c.r.MemorySwap)
			return
		}
		c.size("memory-swap", "--memory-swap", v, check, &c.r.MemorySwap)
	}},
	{"device-read-bps", func(l Limits) Value { return l.DeviceReadBps }, func(c *resolver, v Value) { c.throttle("device-read-bps", v, true, &c.r.ReadBps) }},
	{"device-write-bps", func(l Limits) Value { return l.DeviceWriteBps }, func(c *resolver, v Value) { c.throttle("device-write-bps", v, true, &c.r.WriteBps) }},
	{"device-read-iops", func(l Limits) Value { return l.DeviceReadIOps }, func(c *resolver, v Value) { c.throttle("device-read-iops", v, false, &c.r.ReadIOps) }},
	{"device-write-iops", func(l Limits) Value { return l.DeviceWriteIOps }, func(c *resolver, v Value) { c.throttle("device-write-iops", v, false, &c.r.WriteIOps) }},
	{"blkio-weight", func(l Limits) Value { return l.BlkioWeight }, func(c *resolver, v Value) {
		n, err := strconv.ParseUint(string(v), 10, 16)
		if err != nil || n < 10 || n > 1000 {
			c.add("blkio-weight", "Range of blkio weight is from 10 to 1000")
			return
		}
		c.r.BlkioWeight = uint16(n)
	}},
	{"blkio-weight-device", func(l Limits) Value { return l.BlkioWeightDevice }, func(c *resolver, v Value) {
		dev, w, ok := strings.Cut(string(v), ":")
		n, err := strconv.ParseUint(w, 10, 16)
		switch {
		case !ok || dev == "":
			c.add("blkio-weight-device", "bad format: %s: want <device-path>:<weight>", v)
		case err != nil || n < 10 || n > 1000:
			c.add("blkio-weight-device", "invalid weight for device: %s", v)
		default:
			if path, ok := c.device("blkio-weight-device", dev); ok {
				c.r.BlkioWeightDevice = DeviceRate{Path: path, Rate: n}
			}
		}
	}},
	{"pids-limit", func(l Limits) Value { return l.PidsLimit }, func(c *resolver, v Value) {
		// Unlimited (0 or -1) is refused on purpose: see DefaultPidsLimit.
		c.whole("pids-limit", v, "a whole number", func(n int64) string {
			return when(n < 1 || n > MaxPidsLimit, fmt.Sprintf("must be from 1 to %d, got %d", MaxPidsLimit, n))
		}, &c.r.PidsLimit)
	}},
}

// when is msg if bad, else "": a range check's refusal.
func when(bad bool, msg string) string {
	if bad {
		return msg
	}
	return ""
}

// resolver is one lane's limits being resolved: what was asked, the host,
// what they resolved to so far, and the errors.
type resolver struct {
	l    Limits
	host Host
	r    Resources
	errs Errors
}

func (c *resolver) add(field, format string, args ...any) {
	c.errs = append(c.errs, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// supported says whether a flag is set, short enough to parse, and one the
// host applies; an error says why not, but for a flag not set.
func (c *resolver) supported(field string, v Value) bool {
	if v == "" {
		return false
	}
	if len(v) > maxValueLen {
		// Refused before any parsing: nothing a limit means is longer.
		c.add(field, "at most %d characters, got %d", maxValueLen, len(v))
		return false
	}
	if why, no := c.host.Unsupported[field]; no {
		c.add(field, "this host cannot apply %s: %s", field, why)
		return false
	}
	return true
}

// whole resolves a flag that takes a whole number (what it is: "a whole
// number", "microseconds as a whole number") into out, unless check
// refuses it.
func (c *resolver) whole(field string, v Value, what string, check func(int64) string, out *int64) {
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		c.add(field, "invalid argument %q for \"--%s\" flag: want %s", v, field, what)
		return
	}
	c.set(field, n, check, out)
}

// size resolves a flag that takes a size (64m) into out, unless check
// refuses it; flag is how the docker CLI names it.
func (c *resolver) size(field, flag string, v Value, check func(int64) string, out *int64) {
	n, err := units.RAMInBytes(string(v))
	if err != nil {
		c.add(field, "invalid argument %q for \"%s\" flag: %v", v, flag, err)
		return
	}
	c.set(field, n, check, out)
}

func (c *resolver) set(field string, n int64, check func(int64) string, out *int64) {
	if msg := check(n); msg != "" {
		c.add(field, "%s", msg)
		return
	}
	*out = n
}

// device is a block device a flag names: "auto" for the disk under the
// engine's data root, or a clean path that exists on the engine's host.
func (c *resolver) device(field, dev string) (string, bool) {
	if dev == "auto" {
		if c.host.DataRootDevice == "" {
			c.add(field, "the device auto (the disk under the engine's data root) is unknown on this host: name the device")
			return "", false
		}
		return c.host.DataRootDevice, true
	}
	if !CleanDevicePath(dev) {
		c.add(field, "bad format for device path: %s (want a clean path under /dev/)", dev)
		return "", false
	}
	if c.host.DeviceExists != nil && !c.host.DeviceExists(dev) {
		c.add(field, "no such device on the engine's host: %s", dev)
		return "", false
	}
	return dev, true
}

// throttle resolves a block IO throttle, <device>:<rate>, in bytes (5mb)
// or operations a second.
func (c *resolver) throttle(field string, v Value, bytes bool, out *DeviceRate) {
	dev, rateText, ok := strings.Cut(string(v), ":")
	if !ok || dev == "" {
		c.add(field, "bad format: %s: want <device-path>:<rate>, e.g. /dev/sda:5mb or auto:5mb", v)
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
			c.add(field, "invalid rate for device: %s. The correct format is <device-path>:<number>[<unit>]. Number must be a positive integer. Unit is optional and can be kb, mb, or gb", v)
		} else {
			c.add(field, "invalid rate for device: %s. The correct format is <device-path>:<number>. Number must be a positive integer", v)
		}
		return
	}
	if path, ok := c.device(field, dev); ok {
		*out = DeviceRate{Path: path, Rate: uint64(rate)}
	}
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

// CleanDevicePath says whether p is a plain path under /dev: clean, short,
// and of letters, digits and / _ . - only.
func CleanDevicePath(p string) bool {
	return strings.HasPrefix(p, "/dev/") && path.Clean(p) == p && len(p) <= maxValueLen &&
		strings.Trim(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/_.-") == ""
}

// MaxCPUBurst bounds a lane's cpu_burst: the kernel takes at most its
// quota, which is at most a second.
const MaxCPUBurst = time.Second

// cpuBurst checks a lane's cpu_burst ("50ms") against its quota and the
// host, and gives it in microseconds, as cpu.cfs_burst_us and cpu.max.burst
// take it.
func cpuBurst(v string, res Resources, host Host) (int64, string) {
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return 0, fmt.Sprintf("invalid duration %q: want e.g. \"50ms\"", v)
	case d < time.Millisecond || d > MaxCPUBurst:
		return 0, fmt.Sprintf("want from 1ms to %s, got %s", MaxCPUBurst, d)
	case host.Kubernetes:
		return 0, "Kubernetes has no field for a CFS burst (kubernetes/kubernetes#104516), and a pod's cgroup is the kubelet's: run this lane on a Docker engine"
	}
	if why, no := host.Unsupported["cpu_burst"]; no {
		return 0, why
	}
	quota := time.Duration(res.CFSQuotaUs()) * time.Microsecond
	switch {
	case quota <= 0:
		return 0, "a burst is of unused quota: give the lane a CPU quota (--cpus or --cpu-quota)"
	case d > quota:
		return 0, fmt.Sprintf("the kernel takes a burst of at most the quota (%s), got %s", quota, d)
	}
	return d.Microseconds(), ""
}

// CFSQuotaUs is the lane's CFS quota per period in microseconds, from
// --cpus or --cpu-quota; 0 if it has none.
func (r Resources) CFSQuotaUs() int64 {
	if r.NanoCPUs > 0 {
		return r.NanoCPUs * r.CFSPeriodUs() / 1e9
	}
	return max(0, r.CPUQuota)
}

// CFSPeriodUs is the lane's CFS period in microseconds.
func (r Resources) CFSPeriodUs() int64 {
	if r.CPUPeriod > 0 && r.NanoCPUs == 0 {
		return r.CPUPeriod
	}
	return DefaultCFSPeriod
}

// DefaultCFSPeriod is the kernel's CFS period, in microseconds, that
// docker's --cpus is set against.
const DefaultCFSPeriod = 100000

// DefaultShares is the kernel's cpu.shares of a group that sets none.
const DefaultShares = 1024
