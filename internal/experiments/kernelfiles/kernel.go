package kernelfiles

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	units "github.com/docker/go-units"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// KernelFile is what one docker limit writes in the kernel: the cgroup
// file, and what the kernel should show in it once the engine (runc) has
// applied the limit. The mapping follows runc's cgroup drivers
// (libcontainer/cgroups/fs for v1, fs2 for v2) and the kernel's files
// (https://docs.kernel.org/admin-guide/cgroup-v1/ and
// https://docs.kernel.org/admin-guide/cgroup-v2.html).
type KernelFile struct {
	Flag  string `json:"flag"`  // docker run's flag: "--cpus"
	Value string `json:"value"` // the flag's value as the engine applied it: "0.5"
	// Controller is the v1 hierarchy the file lives in ("cpu", "memory");
	// on v2 every file is in the container's one directory.
	Controller string `json:"controller,omitempty"`
	File       string `json:"file"` // "cpu.max"
	Want       string `json:"want"` // what the kernel should show: "50000 100000"
	// Either: the flag writes one of several files, whichever the kernel
	// offers (a weight goes to io.bfq.weight under BFQ, else io.weight);
	// it holds when any of them does.
	Either bool `json:"either,omitempty"`
	// Formula names the conversion Want follows, where runtimes differ
	// (a pod's cpu.weight on v2).
	Formula string `json:"formula,omitempty"`
	// CPUs, for a cpuset file, is how many CPUs it must list (which ones
	// are the kubelet's to pick); Want then only describes them.
	CPUs int `json:"cpus,omitempty"`
}

// Holds says whether a file's contents show the wanted value: some line of
// it begins with Want's first field and has all of Want's fields
// ("254:0 rbps=1048576" holds in "254:0 rbps=1048576 wbps=max riops=max
// wiops=max").
func (k KernelFile) Holds(contents string) bool {
	if k.CPUs > 0 {
		cpus, err := specs.ParseCPUSet(strings.TrimSpace(contents))
		return err == nil && len(cpus) == k.CPUs
	}
	want := strings.Fields(k.Want)
	if len(want) == 0 {
		return false
	}
	for _, line := range strings.Split(contents, "\n") {
		got := strings.Fields(line)
		if len(got) == 0 || got[0] != want[0] {
			continue
		}
		all := true
		for _, w := range want[1:] {
			found := false
			for _, g := range got[1:] {
				found = found || g == w
			}
			all = all && found
		}
		if all {
			return true
		}
	}
	return false
}

// KernelFiles lists the cgroup files that the applied limits r write, for
// cgroup v2 or v1. devices maps a device path to its "major:minor", which
// the kernel's IO files name devices by; a device missing from it is shown
// by its path.
func KernelFiles(r specs.Resources, v2 bool, devices map[string]string) []KernelFile {
	k := &kernelFiles{v2: v2, devices: devices}
	k.cpu(r)
	k.memory(r)
	k.blockIO(r)
	return k.out
}

// kernelFiles gathers the files a lane's limits write, for a hierarchy.
type kernelFiles struct {
	v2      bool
	devices map[string]string
	out     []KernelFile
}

func (k *kernelFiles) add(flag, value, controller, file, want string) {
	if k.v2 {
		controller = ""
	}
	k.out = append(k.out, KernelFile{Flag: flag, Value: value, Controller: controller, File: file, Want: want})
}

func num(n int64) string { return strconv.FormatInt(n, 10) }

// cpu: the CFS bandwidth, the shares and the cpuset.
func (k *kernelFiles) cpu(r specs.Resources) {
	v2, add := k.v2, k.add
	// --cpus is a quota over the default 100 ms period.
	period, quota := r.CPUPeriod, r.CPUQuota
	flag, value := "--cpu-quota", num(r.CPUQuota)
	if r.NanoCPUs > 0 {
		period, quota = specs.DefaultCFSPeriod, r.NanoCPUs*specs.DefaultCFSPeriod/1e9
		flag, value = "--cpus", strconv.FormatFloat(float64(r.NanoCPUs)/1e9, 'f', -1, 64)
	}
	if quota > 0 || period > 0 {
		if period <= 0 {
			period = specs.DefaultCFSPeriod
		}
		if r.NanoCPUs == 0 && quota <= 0 {
			flag, value = "--cpu-period", num(period)
		}
		if v2 {
			q := "max"
			if quota > 0 {
				q = num(quota)
			}
			add(flag, value, "", "cpu.max", q+" "+num(period))
		} else {
			if quota > 0 {
				add(flag, value, "cpu", "cpu.cfs_quota_us", num(quota))
			}
			add(flag, value, "cpu", "cpu.cfs_period_us", num(period))
		}
	}
	if b := r.CPUBurstUs; b > 0 {
		// No engine writes it: the server does (CgroupReader.WriteCPUBurst).
		value := (time.Duration(b) * time.Microsecond).String()
		if v2 {
			add("cpu_burst", value, "", "cpu.max.burst", num(b))
		} else {
			add("cpu_burst", value, "cpu", "cpu.cfs_burst_us", num(b))
		}
	}
	if b := r.MemoryHigh; b > 0 && v2 {
		// No engine writes it: the server does (CgroupReader.WriteMemoryHigh).
		add("memory_high", units.BytesSize(float64(b)), "", "memory.high", num(b))
	}
	if s := r.CPUShares; s > 0 {
		if v2 {
			add("--cpu-shares", num(s), "", "cpu.weight", strconv.FormatFloat(WeightOfShares(s, true), 'f', 0, 64))
		} else {
			add("--cpu-shares", num(s), "cpu", "cpu.shares", num(s))
		}
	}
	if c := r.CpusetCpus; c != "" {
		want := c
		if cpus, err := specs.ParseCPUSet(c); err == nil {
			want = cpuRanges(cpus)
		}
		add("--cpuset-cpus", c, "cpuset", "cpuset.cpus", want)
	}
}

// memory: the limit, swap, the reservation, and pids.
func (k *kernelFiles) memory(r specs.Resources) {
	v2, add := k.v2, k.add
	if m := r.Memory; m > 0 {
		add("--memory", num(m), "memory", pick(v2, "memory.max", "memory.limit_in_bytes"), num(m))
	}
	if s := r.MemorySwap; s != 0 {
		switch {
		case v2 && s < 0:
			add("--memory-swap", num(s), "", "memory.swap.max", "max")
		case v2 && r.Memory > 0:
			// v2 limits swap alone; docker's value is memory plus swap.
			add("--memory-swap", num(s), "", "memory.swap.max", num(s-r.Memory))
		case !v2 && s < 0:
			add("--memory-swap", num(s), "memory", "memory.memsw.limit_in_bytes", V1Unlimited)
		case !v2:
			add("--memory-swap", num(s), "memory", "memory.memsw.limit_in_bytes", num(s))
		}
	}
	if m := r.MemoryReservation; m > 0 {
		add("--memory-reservation", num(m), "memory", pick(v2, "memory.low", "memory.soft_limit_in_bytes"), num(m))
	}
	if p := r.PidsLimit; p > 0 {
		add("--pids-limit", num(p), "pids", "pids.max", num(p))
	}
}

// blockIO: the throttles and the weights, on the devices as the kernel
// names them.
func (k *kernelFiles) blockIO(r specs.Resources) {
	v2, add, devices := k.v2, k.add, k.devices
	dev := func(path string) string {
		if d, ok := devices[path]; ok {
			return d
		}
		return path
	}
	throttle := func(flag string, d specs.DeviceRate, v1file, v2key string) {
		if d.Path == "" {
			return
		}
		value := d.Path + ":" + strconv.FormatUint(d.Rate, 10)
		if v2 {
			add(flag, value, "", "io.max", dev(d.Path)+" "+v2key+"="+strconv.FormatUint(d.Rate, 10))
		} else {
			add(flag, value, "blkio", v1file, dev(d.Path)+" "+strconv.FormatUint(d.Rate, 10))
		}
	}
	throttle("--device-read-bps", r.ReadBps, "blkio.throttle.read_bps_device", "rbps")
	throttle("--device-write-bps", r.WriteBps, "blkio.throttle.write_bps_device", "wbps")
	throttle("--device-read-iops", r.ReadIOps, "blkio.throttle.read_iops_device", "riops")
	throttle("--device-write-iops", r.WriteIOps, "blkio.throttle.write_iops_device", "wiops")
	either := func(flag, value string, files ...[2]string) {
		for _, f := range files {
			k.out = append(k.out, KernelFile{Flag: flag, Value: value, Controller: pick(v2, "", "blkio"), File: f[0], Want: f[1], Either: len(files) > 1})
		}
	}
	if w := r.BlkioWeight; w > 0 {
		ws := strconv.Itoa(int(w))
		if v2 {
			// runc writes BFQ's weight as it is, or converts it to
			// io.weight's range (1..10000) where BFQ is absent.
			either("--blkio-weight", ws, [2]string{"io.bfq.weight", "default " + ws},
				[2]string{"io.weight", "default " + strconv.Itoa(1+(int(w)-10)*9999/990)})
		} else {
			either("--blkio-weight", ws, [2]string{"blkio.bfq.weight", "default " + ws}, [2]string{"blkio.weight", ws})
		}
	}
	if d := r.BlkioWeightDevice; d.Path != "" {
		value := d.Path + ":" + strconv.FormatUint(d.Rate, 10)
		line := dev(d.Path) + " " + strconv.FormatUint(d.Rate, 10)
		if v2 {
			either("--blkio-weight-device", value, [2]string{"io.bfq.weight", line})
		} else {
			either("--blkio-weight-device", value, [2]string{"blkio.bfq.weight", line}, [2]string{"blkio.weight_device", line})
		}
	}
}

func pick(v2 bool, a, b string) string {
	if v2 {
		return a
	}
	return b
}

// cpuRanges prints sorted CPU numbers as the kernel prints a cpuset:
// "0-2,4".
func cpuRanges(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", cpus[i], cpus[j])
		} else {
			fmt.Fprintf(&b, "%d", cpus[i])
		}
		i = j + 1
	}
	return b.String()
}

// WeightOfShares is the CFS weight a --cpu-shares value ends as. On cgroup
// v2 the runtime converts shares to cpu.weight with runc's formula
// (1 + (shares-2)*9999/262142), which moves the ratios a little.
func WeightOfShares(shares int64, v2 bool) float64 {
	if shares <= 0 {
		shares = specs.DefaultShares
	}
	if !v2 {
		return float64(shares)
	}
	return float64(WeightLinear(shares))
}

// V1Unlimited is how v1 shows "no limit": the largest page-aligned int64.
const V1Unlimited = "9223372036854771712"
