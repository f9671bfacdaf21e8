package engine

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
)

func TestCalculateMemUsageUnixNoCache(t *testing.T) {
	tests := []struct {
		name  string
		usage uint64
		stat  map[string]uint64
		want  uint64
	}{
		{"cgroup v1 subtracts total_inactive_file", 100, map[string]uint64{"total_inactive_file": 30, "inactive_file": 10}, 70},
		{"cgroup v2 subtracts inactive_file", 100, map[string]uint64{"inactive_file": 30}, 70},
		{"v1 with more inactive than usage falls to v2 key", 100, map[string]uint64{"total_inactive_file": 300, "inactive_file": 10}, 90},
		{"nothing to subtract", 100, map[string]uint64{}, 100},
		{"inactive larger than usage", 10, map[string]uint64{"inactive_file": 30}, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := calculateMemUsageUnixNoCache(tt.usage, tt.stat); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestCalculateBlockIO(t *testing.T) {
	tests := []struct {
		name        string
		entries     []container.BlkioStatEntry
		read, write uint64
	}{
		{"cgroup v1 capitalised ops", []container.BlkioStatEntry{
			{Major: 8, Op: "Read", Value: 4096}, {Major: 8, Op: "Write", Value: 100}, {Major: 8, Op: "Total", Value: 4196},
			{Major: 8, Minor: 16, Op: "Read", Value: 4}}, 4100, 100},
		{"cgroup v2 lower-case ops", []container.BlkioStatEntry{{Op: "read", Value: 7}, {Op: "write", Value: 9}}, 7, 9},
		{"none", nil, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, w := calculateBlockIO(tt.entries)
			if r != tt.read || w != tt.write {
				t.Errorf("got %d/%d, want %d/%d", r, w, tt.read, tt.write)
			}
		})
	}
}

func TestCalculateCPUCores(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name      string
		prev, cur Counters
		want      float64
	}{
		{"one core for a second", Counters{At: t0, CPUNs: 1e9}, Counters{At: t0.Add(time.Second), CPUNs: 2e9}, 1},
		{"half a core over 250ms", Counters{At: t0}, Counters{At: t0.Add(250 * time.Millisecond), CPUNs: 125e6}, 0.5},
		{"two cores", Counters{At: t0}, Counters{At: t0.Add(time.Second), CPUNs: 2e9}, 2},
		{"no time passed", Counters{At: t0}, Counters{At: t0, CPUNs: 5}, 0},
		{"counter went back", Counters{At: t0, CPUNs: 9e9}, Counters{At: t0.Add(time.Second), CPUNs: 1e9}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := calculateCPUCores(tt.prev, tt.cur); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("got %g, want %g", got, tt.want)
			}
		})
	}
}

func TestMakeSample(t *testing.T) {
	t0 := time.Unix(1000, 0)
	prev := Counters{At: t0, CPUNs: 1e9, Periods: 20, ThrottledPeriods: 10, ThrottledNs: 50e6, WriteBytes: 1 << 20}
	cur := Counters{At: t0.Add(500 * time.Millisecond), CPUNs: 1.25e9, Periods: 25, ThrottledPeriods: 13, ThrottledNs: 80e6,
		WriteBytes: 2 << 20, MemBytes: 42, MemLimit: 64 << 20, Pids: 3}
	s := MakeSample(2, 7.5, prev, cur, Progress{Throughput: 9})
	// Display units, every rate per second: 30 ms throttled in 0.5 s is
	// 60 ms a second, 3 of 5 periods 60%, 1 MiB written in 0.5 s 2 MiB/s.
	want := Sample{Lane: 2, T: 7.5, DT: 0.5, CPU: 0.5, MemMiB: 42.0 / MiB, MemLimitMiB: 64, WriteMiBs: 2, Pids: 3, Periods: 5, ThrottledPeriods: 3,
		ThrottledPct: 60, ThrottledMsPerS: 60, Progress: Progress{Throughput: 9}}
	if s != want {
		t.Errorf("sample = %+v\nwant     %+v", s, want)
	}
}

// Both layouts hold the same container state, so they must read the same.
var wantFixture = Counters{
	CPUNs: 2.5e9, UserNs: 1.5e9, SysNs: 0.9e9,
	Periods: 40, ThrottledPeriods: 12, ThrottledNs: 600e6,
	MemBytes:  73400320 - 4194304,
	ReadBytes: 4096 + 8192, WriteBytes: 1 << 20, ReadOps: 1, WriteOps: 256,
	Pids: 3,
}

func TestCgroupFiles(t *testing.T) {
	tests := []struct {
		name, root string
		memLimit   uint64
		readOps    uint64
	}{
		{"v1 cgroupfs driver", "testdata/cgroup-v1", 64 << 20, 1},
		{"v2 systemd driver", "testdata/cgroup-v2", 0, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := FindCgroup(tt.root, "abc123", 0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.Read()
			if err != nil {
				t.Fatal(err)
			}
			want := wantFixture
			want.MemLimit, want.ReadOps = tt.memLimit, tt.readOps
			if tt.root == "testdata/cgroup-v2" {
				want.PressureUs, want.MemPressureUs, want.IOPressureUs, want.HasPressure = 250000, 7000, 42000, true // v1 has no PSI
			}
			got.At = time.Time{}
			if got != want {
				t.Errorf("read %+v\nwant %+v", got, want)
			}
		})
	}
	if _, err := FindCgroup("testdata/cgroup-v1", "other", 0); err == nil {
		t.Error("found a cgroup for a container that has none")
	}
}

func TestCountersFromEngine(t *testing.T) {
	var s container.StatsResponse
	s.Read = time.Unix(1000, 0)
	s.CPUStats.CPUUsage.TotalUsage = 2.5e9
	s.CPUStats.CPUUsage.UsageInUsermode = 1.5e9
	s.CPUStats.CPUUsage.UsageInKernelmode = 0.9e9
	s.CPUStats.ThrottlingData = container.ThrottlingData{Periods: 40, ThrottledPeriods: 12, ThrottledTime: 600e6}
	s.MemoryStats = container.MemoryStats{Usage: 73400320, Stats: map[string]uint64{"total_inactive_file": 4194304}, Limit: 64 << 20}
	s.BlkioStats.IoServiceBytesRecursive = []container.BlkioStatEntry{{Op: "Read", Value: 4096}, {Op: "Read", Value: 8192}, {Op: "Write", Value: 1 << 20}}
	s.BlkioStats.IoServicedRecursive = []container.BlkioStatEntry{{Op: "Read", Value: 1}, {Op: "Write", Value: 256}}
	s.PidsStats.Current = 3
	got := countersFromEngine(s)
	want := wantFixture
	want.At, want.MemLimit = s.Read, 64<<20
	if got != want {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestPressureSample(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := MakeSample(0, 1, Counters{At: t0, PressureUs: 1000, MemPressureUs: 10, IOPressureUs: 500, HasPressure: true},
		Counters{At: t0.Add(2 * time.Second), PressureUs: 501000, MemPressureUs: 4010, IOPressureUs: 80500, HasPressure: true}, Progress{})
	for name, c := range map[string]struct {
		got  *float64
		want float64
	}{"cpu": {s.CPUPressure, 250}, "memory": {s.MemPressure, 2}, "io": {s.IOPressure, 40}} {
		if c.got == nil || *c.got != c.want {
			t.Errorf("%s pressure %v, want %g ms a second", name, c.got, c.want)
		}
	}
	if s := MakeSample(0, 1, Counters{At: t0}, Counters{At: t0.Add(time.Second)}, Progress{}); s.CPUPressure != nil || s.MemPressure != nil || s.IOPressure != nil {
		t.Errorf("pressure %v %v %v where the kernel reports none", s.CPUPressure, s.MemPressure, s.IOPressure)
	}
}

// TestCgroupReaderRereadsItsOpenFiles: the reader keeps each file open and
// reads it again from its start, so a new value is seen, a file larger
// than its buffer is read whole, and a closed reader reads no more.
func TestCgroupReaderRereadsItsOpenFiles(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS("testdata/cgroup-v1")); err != nil {
		t.Fatal(err)
	}
	r, err := FindCgroup(root, "abc123", 0)
	if err != nil {
		t.Fatal(err)
	}
	first, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	usage := filepath.Join(root, "cpuacct/docker/abc123/cpuacct.usage")
	if err := os.WriteFile(usage, []byte("9000000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// memory.stat past the reader's first buffer: the value wanted last.
	// It is read again when the usage moves (TestSlowFilesV1).
	usageMem := uint64(73400320 + 4096)
	if err := os.WriteFile(filepath.Join(root, "memory/docker/abc123/memory.usage_in_bytes"), []byte(strconv.FormatUint(usageMem, 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	stat := filepath.Join(root, "memory/docker/abc123/memory.stat")
	big := strings.Repeat("padding_key 1\n", 600) + "total_inactive_file 1048576\n"
	if err := os.WriteFile(stat, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	second, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	if first.CPUNs == second.CPUNs || second.CPUNs != 9e9 {
		t.Errorf("CPU %d then %d: the new value was not read", first.CPUNs, second.CPUNs)
	}
	if second.MemBytes != usageMem-1048576 {
		t.Errorf("memory %d: a memory.stat of %d bytes was not read whole", second.MemBytes, len(big))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(); err == nil {
		t.Error("a closed reader read")
	}
}

func BenchmarkParseCgroupV1Files(b *testing.B) {
	r, err := FindCgroup("testdata/cgroup-v1", "abc123", 0)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Read(); err != nil {
			b.Fatal(err)
		}
	}
}

// Cumulative counters that fall are no reading of the same cgroup.
func TestCountersFell(t *testing.T) {
	prev := Counters{CPUNs: 5e9, Periods: 40, ThrottledPeriods: 3, WriteBytes: 1 << 20}
	if prev.Fell(prev) {
		t.Error("a reading equal to the last fell")
	}
	more := prev
	more.CPUNs, more.Periods, more.MemBytes = 6e9, 41, 0 // memory use may fall
	if more.Fell(prev) {
		t.Error("a reading with more CPU time and periods fell")
	}
	zero := Counters{}
	if !zero.Fell(prev) {
		t.Error("a reading of zeros after counters did not fall")
	}
	fewer := more
	fewer.Periods = 39
	if !fewer.Fell(prev) {
		t.Error("fewer periods than the last reading did not fall")
	}
}

// A sample recorded before display units (bytes, bytes per second, and
// milliseconds in the interval) reads as a sample of now.
func TestLegacySampleReadsInDisplayUnits(t *testing.T) {
	old := `{"lane":1,"t":2,"dt":0.5,"cpu":0.25,"mem":2097152,"mem_limit":67108864,"read_bps":1048576,"write_bps":3145728,
		"read_iops":4,"write_iops":6,"pids":2,"periods":5,"throttled_periods":2,"throttled_ms":10,"throughput":3,"iops":7,"pressure_ms":5}`
	if !IsLegacySamples([]byte(old)) {
		t.Fatal("not seen as a legacy sample")
	}
	var s Sample
	if err := json.Unmarshal([]byte(old), &s); err != nil {
		t.Fatal(err)
	}
	cpu := 10.0
	want := Sample{Lane: 1, T: 2, DT: 0.5, CPU: 0.25, MemMiB: 2, MemLimitMiB: 64, ReadMiBs: 1, WriteMiBs: 3, ReadIOPS: 4, WriteIOPS: 6,
		IORequests: 10, Pids: 2, Periods: 5, ThrottledPeriods: 2, ThrottledPct: 40, ThrottledMsPerS: 20, CPUPressure: &cpu,
		Progress: Progress{Throughput: 3, WorkIOPS: 7}}
	if s.CPUPressure == nil || *s.CPUPressure != cpu {
		t.Fatalf("cpu pressure %v, want %g ms a second", s.CPUPressure, cpu)
	}
	s.CPUPressure = &cpu
	if s != want {
		t.Errorf("got  %+v\nwant %+v", s, want)
	}
	// A sample of now reads as it was written.
	now := MakeSample(0, 1, Counters{At: time.Unix(0, 0)}, Counters{At: time.Unix(1, 0), CPUNs: 5e8, ReadBytes: MiB}, Progress{Throughput: 1})
	b, _ := json.Marshal(now)
	if IsLegacySamples(b) {
		t.Fatalf("a sample of now seen as legacy: %s", b)
	}
	var back Sample
	if err := json.Unmarshal(b, &back); err != nil || back != now {
		t.Errorf("round trip: %+v, %v; want %+v", back, err, now)
	}
}
