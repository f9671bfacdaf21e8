package engine_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// raw is a container's counters read straight from the kernel's files, the
// plain way (os.ReadFile, strings.Fields), independently of the reader.
type raw struct {
	cpuNs, periods, throttled, throttledNs uint64
	memUsage, inactive                     uint64
	readBytes, writeBytes, readOps, writes uint64
	pids                                   uint64
	psi                                    [3]uint64 // cpu, memory, io: "some" totals in µs (v2)
}

func readRaw(t *testing.T, dir map[string]string, v2 bool) raw {
	t.Helper()
	file := func(controller, name string) string {
		d := dir[controller]
		if v2 {
			d = dir["unified"]
		}
		b, err := os.ReadFile(filepath.Join(d, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	keyed := func(s string) map[string]uint64 {
		m := map[string]uint64{}
		for _, line := range strings.Split(s, "\n") {
			if f := strings.Fields(line); len(f) == 2 {
				m[f[0]], _ = strconv.ParseUint(f[1], 10, 64)
			}
		}
		return m
	}
	one := func(s string) uint64 { n, _ := strconv.ParseUint(strings.TrimSpace(s), 10, 64); return n }
	var r raw
	if v2 {
		cpu := keyed(file("", "cpu.stat"))
		r.cpuNs, r.periods, r.throttled, r.throttledNs = cpu["usage_usec"]*1000, cpu["nr_periods"], cpu["nr_throttled"], cpu["throttled_usec"]*1000
		r.memUsage, r.inactive = one(file("", "memory.current")), keyed(file("", "memory.stat"))["inactive_file"]
		for _, line := range strings.Split(file("", "io.stat"), "\n") {
			for _, kv := range strings.Fields(line)[min(1, len(strings.Fields(line))):] {
				k, v, _ := strings.Cut(kv, "=")
				n, _ := strconv.ParseUint(v, 10, 64)
				switch k {
				case "rbytes":
					r.readBytes += n
				case "wbytes":
					r.writeBytes += n
				case "rios":
					r.readOps += n
				case "wios":
					r.writes += n
				}
			}
		}
		for i, name := range []string{"cpu.pressure", "memory.pressure", "io.pressure"} {
			for _, f := range strings.Fields(strings.Split(file("", name), "\n")[0]) {
				if v, ok := strings.CutPrefix(f, "total="); ok {
					r.psi[i], _ = strconv.ParseUint(v, 10, 64)
				}
			}
		}
	} else {
		r.cpuNs = one(file("cpuacct", "cpuacct.usage"))
		cpu := keyed(file("cpu", "cpu.stat"))
		r.periods, r.throttled, r.throttledNs = cpu["nr_periods"], cpu["nr_throttled"], cpu["throttled_time"]
		r.memUsage, r.inactive = one(file("memory", "memory.usage_in_bytes")), keyed(file("memory", "memory.stat"))["total_inactive_file"]
		sum := func(name string) (read, write uint64) {
			for _, line := range strings.Split(file("blkio", name), "\n") {
				if f := strings.Fields(line); len(f) == 3 {
					n, _ := strconv.ParseUint(f[2], 10, 64)
					switch strings.ToLower(f[1]) {
					case "read":
						read += n
					case "write":
						write += n
					}
				}
			}
			return read, write
		}
		r.readBytes, r.writeBytes = sum("blkio.throttle.io_service_bytes")
		r.readOps, r.writes = sum("blkio.throttle.io_serviced")
	}
	r.pids = one(file("pids", "pids.current"))
	return r
}

// TestCountersAgainstKernelFiles checks the sampler's formulas against the
// kernel's own counters: for a busy, throttled container that writes, each
// cumulative counter the reader returns lies between two plain readings
// of the files taken just before and just after it, and memory is usage
// less inactive file as the files show it (v1 or v2, PSI on v2). The
// gauges (pids, memory) rest between readings once a second at most: each
// is as one of the plain readings of the last second shows it.
func TestCountersAgainstKernelFiles(t *testing.T) {
	eng, image, h := enginetest.Engine(t)
	if !h.ReadsCgroups() {
		t.Fatalf("this test reads cgroup files, which are not visible here: %s", h.StatsNote)
	}
	// A fifth of a CPU keeps the writer throttled and still lets it write
	// under emulation (the v2 VM runs on qemu TCG, where 0.02 CPUs did not
	// write ten requests in a minute).
	lane := specs.PlannedLane{Workload: specs.Workload{Kind: specs.KindDiskWrite, MB: 400, BS: 1 << 20}, Target: -1,
		Resources: specs.Resources{NanoCPUs: 2e8, WriteBps: specs.DeviceRate{Path: h.DataRootDevice, Rate: 10 << 20}}}
	_, cg := startLane(t, eng, image, "formulas", lane)
	dirs := engine.CgroupDirs(cg)
	v2 := h.CgroupV2()
	enginetest.WaitFor(t, 2*time.Minute, "the container writing and throttled", func() bool {
		r := readRaw(t, dirs, v2)
		return r.writes > 10 && r.periods > 0
	})
	type stamped struct {
		raw
		at time.Time
	}
	var recent []stamped // the plain readings of the last second
	plain := func() raw {
		r := readRaw(t, dirs, v2)
		now := time.Now()
		recent = append(slices.DeleteFunc(recent, func(s stamped) bool { return now.Sub(s.at) > time.Second+100*time.Millisecond }), stamped{r, now})
		return r
	}
	for round := 0; round < 8; round++ {
		before := plain()
		got, err := cg.Read()
		if err != nil {
			t.Fatal(err)
		}
		after := plain()
		between := func(name string, v, lo, hi uint64) {
			if v < lo || v > hi {
				t.Errorf("round %d: %s = %d, the kernel's files show %d before and %d after", round, name, v, lo, hi)
			}
		}
		between("CPU ns", got.CPUNs, before.cpuNs, after.cpuNs)
		between("CFS periods", got.Periods, before.periods, after.periods)
		between("throttled periods", got.ThrottledPeriods, before.throttled, after.throttled)
		between("throttled ns", got.ThrottledNs, before.throttledNs, after.throttledNs)
		between("bytes written", got.WriteBytes, before.writeBytes, after.writeBytes)
		between("write ops", got.WriteOps, before.writes, after.writes)
		between("bytes read", got.ReadBytes, before.readBytes, after.readBytes)
		// Memory moves both ways: within 2 MiB of a plain reading.
		want := func(r raw) int64 { return int64(r.memUsage) - int64(r.inactive) }
		pidsSeen, memSeen := false, false
		var pids, mems []int64
		for _, r := range recent {
			pidsSeen = pidsSeen || got.Pids == r.pids
			memSeen = memSeen || abs(int64(got.MemBytes)-want(r.raw)) <= 2<<20
			pids, mems = append(pids, int64(r.pids)), append(mems, want(r.raw))
		}
		if !pidsSeen {
			t.Errorf("round %d: pids %d, the files in the last second show %v", round, got.Pids, pids)
		}
		if !memSeen {
			t.Errorf("round %d: memory %d, the files in the last second show usage less inactive file %v", round, got.MemBytes, mems)
		}
		if v2 {
			if !got.HasPressure {
				t.Fatal("cgroup v2 with PSI, and the reader reports no pressure")
			}
			between("CPU pressure µs", got.PressureUs, before.psi[0], after.psi[0])
			between("memory pressure µs", got.MemPressureUs, before.psi[1], after.psi[1])
			between("IO pressure µs", got.IOPressureUs, before.psi[2], after.psi[2])
		} else if got.HasPressure {
			t.Error("cgroup v1 has no PSI, and the reader reports pressure")
		}
		time.Sleep(200 * time.Millisecond) // the next round, a little later in the container's life
	}
	// The sample's rates from two readings agree with the files' deltas.
	first, _ := cg.Read()
	r0 := readRaw(t, dirs, v2)
	time.Sleep(time.Second)
	r1 := readRaw(t, dirs, v2)
	second, _ := cg.Read()
	s := engine.MakeSample(0, 1, first, second, engine.Progress{})
	dt := second.At.Sub(first.At).Seconds()
	files := float64(r1.cpuNs-r0.cpuNs) / 1e9 / dt
	// The quota holds it; CFS notices a period's quota spent at a
	// scheduler tick (4 ms at Debian's HZ=250), so it may be overrun by up
	// to a tick a period: 0.04 cores more at most.
	quota := float64(lane.Resources.NanoCPUs) / 1e9
	if d := s.CPU - files; d > 0.2*files+0.005 || -d > 0.2*files+0.005 || s.CPU > quota+0.004/0.1 {
		t.Errorf("sample CPU %.3f cores; the files' delta %.3f cores; the quota %.2f, overrun by a tick a period at most", s.CPU, files, quota)
	}
	enginetest.Figure(t, fmt.Sprintf("sampler against the kernel's files (a writer at --cpus %.2f, 10 MiB/s)", quota), "CPU %.4f cores (files %.4f), write %.1f MiB/s, %d/%d periods throttled",
		s.CPU, files, s.WriteMiBs, s.ThrottledPeriods, s.Periods)
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestProcStat reads a stat line whose command holds spaces and
// parentheses, and reads it without allocating past the command.
func TestProcStat(t *testing.T) {
	line := []byte("4242 (a) b (c) R 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 9 0 123 0 0\n")
	comm, ns, ok := engine.ProcStat(line)
	if !ok || comm != "a) b (c" || ns != 325*1e7 {
		t.Errorf("ProcStat = %q %d %v, want \"a) b (c\" 3250000000 true", comm, ns, ok)
	}
	if _, _, ok := engine.ProcStat([]byte("4242 (short) R 1\n")); ok {
		t.Error("a line without utime read as one")
	}
	if n := testing.AllocsPerRun(100, func() { engine.StatTimes(line) }); n != 0 {
		t.Errorf("reading a stat line's CPU allocated %.0f times", n)
	}
}
