package kernelfiles

import (
	"reflect"
	"testing"

	"github.com/limitlab/limitlab/internal/experiments/specs"
)

func TestKernelFiles(t *testing.T) {
	devs := map[string]string{"/dev/vda": "254:0"}
	type file struct{ flag, file, want string }
	files := func(ks []KernelFile) []file {
		var out []file
		for _, k := range ks {
			out = append(out, file{k.Flag, k.File, k.Want})
		}
		return out
	}
	cases := []struct {
		name   string
		r      specs.Resources
		v1, v2 []file
	}{
		{"cpus", specs.Resources{NanoCPUs: 5e8},
			[]file{{"--cpus", "cpu.cfs_quota_us", "50000"}, {"--cpus", "cpu.cfs_period_us", "100000"}},
			[]file{{"--cpus", "cpu.max", "50000 100000"}}},
		{"quota and period", specs.Resources{CPUQuota: 5000, CPUPeriod: 10000},
			[]file{{"--cpu-quota", "cpu.cfs_quota_us", "5000"}, {"--cpu-quota", "cpu.cfs_period_us", "10000"}},
			[]file{{"--cpu-quota", "cpu.max", "5000 10000"}}},
		{"period alone", specs.Resources{CPUPeriod: 50000},
			[]file{{"--cpu-period", "cpu.cfs_period_us", "50000"}},
			[]file{{"--cpu-period", "cpu.max", "max 50000"}}},
		{"shares", specs.Resources{CPUShares: 512},
			[]file{{"--cpu-shares", "cpu.shares", "512"}},
			[]file{{"--cpu-shares", "cpu.weight", "20"}}},
		{"cpuset", specs.Resources{CpusetCpus: "0,1,3"},
			[]file{{"--cpuset-cpus", "cpuset.cpus", "0-1,3"}},
			[]file{{"--cpuset-cpus", "cpuset.cpus", "0-1,3"}}},
		{"memory with docker's default swap", specs.Resources{Memory: 64 << 20, MemorySwap: 128 << 20, MemoryReservation: 32 << 20},
			[]file{{"--memory", "memory.limit_in_bytes", "67108864"}, {"--memory-swap", "memory.memsw.limit_in_bytes", "134217728"}, {"--memory-reservation", "memory.soft_limit_in_bytes", "33554432"}},
			[]file{{"--memory", "memory.max", "67108864"}, {"--memory-swap", "memory.swap.max", "67108864"}, {"--memory-reservation", "memory.low", "33554432"}}},
		{"swap unlimited", specs.Resources{Memory: 64 << 20, MemorySwap: -1},
			[]file{{"--memory", "memory.limit_in_bytes", "67108864"}, {"--memory-swap", "memory.memsw.limit_in_bytes", "9223372036854771712"}},
			[]file{{"--memory", "memory.max", "67108864"}, {"--memory-swap", "memory.swap.max", "max"}}},
		{"pids", specs.Resources{PidsLimit: 64},
			[]file{{"--pids-limit", "pids.max", "64"}},
			[]file{{"--pids-limit", "pids.max", "64"}}},
		{"throttles", specs.Resources{ReadBps: specs.DeviceRate{Path: "/dev/vda", Rate: 1 << 20}, WriteIOps: specs.DeviceRate{Path: "/dev/vda", Rate: 5}},
			[]file{{"--device-read-bps", "blkio.throttle.read_bps_device", "254:0 1048576"}, {"--device-write-iops", "blkio.throttle.write_iops_device", "254:0 5"}},
			[]file{{"--device-read-bps", "io.max", "254:0 rbps=1048576"}, {"--device-write-iops", "io.max", "254:0 wiops=5"}}},
		{"weight", specs.Resources{BlkioWeight: 300},
			[]file{{"--blkio-weight", "blkio.bfq.weight", "default 300"}, {"--blkio-weight", "blkio.weight", "300"}},
			[]file{{"--blkio-weight", "io.bfq.weight", "default 300"}, {"--blkio-weight", "io.weight", "default 2930"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := files(KernelFiles(c.r, false, devs)); !reflect.DeepEqual(got, c.v1) {
				t.Errorf("v1:\n got %v\nwant %v", got, c.v1)
			}
			if got := files(KernelFiles(c.r, true, devs)); !reflect.DeepEqual(got, c.v2) {
				t.Errorf("v2:\n got %v\nwant %v", got, c.v2)
			}
		})
	}
	if k := KernelFiles(specs.Resources{NanoCPUs: 5e8}, false, nil)[0]; k.Controller != "cpu" || k.Value != "0.5" {
		t.Errorf("v1 --cpus: %+v", k)
	}
	if k := KernelFiles(specs.Resources{NanoCPUs: 5e8}, true, nil)[0]; k.Controller != "" {
		t.Errorf("v2 has no controller directories: %+v", k)
	}
}

func TestKernelFileHolds(t *testing.T) {
	cases := []struct {
		want, contents string
		holds          bool
	}{
		{"50000 100000", "50000 100000\n", true},
		{"50000 100000", "max 100000\n", false},
		{"512", "5120\n", false},
		{"254:0 rbps=1048576", "8:0 rbps=1048576 wbps=max riops=max wiops=max\n254:0 rbps=1048576 wbps=max riops=max wiops=max\n", true},
		{"254:0 rbps=1048576", "254:0 rbps=2097152 wbps=max riops=max wiops=max\n", false},
		{"default 300", "default 300\n", true},
		{"default 300", "default 100\n254:0 300\n", false},
		{"", "anything", false},
	}
	for _, c := range cases {
		if got := (KernelFile{Want: c.want}).Holds(c.contents); got != c.holds {
			t.Errorf("want %q in %q: %v", c.want, c.contents, got)
		}
	}
}
