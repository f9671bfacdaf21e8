package engine

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The host's own load, read from /proc on the engine's host (this
// machine, for a local engine): what else used the CPUs while a run ran,
// and how long each lane's threads waited for one. A verdict the host's
// noise could have decided says so (experiments.NoiseEffect).

// userHZ is the unit of /proc/stat and /proc/<pid>/stat times: USER_HZ,
// 100 on every Linux architecture the kernel exports to user space.
const userHZ = 100

// HostCPU is the machine's CPU time, from the first line of /proc/stat,
// in nanoseconds: busy (user, nice, system, irq, softirq; guest time is
// within user), stolen by the hypervisor, and in all.
type HostCPU struct {
	At                 time.Time
	Busy, Steal, Total uint64
}

// ReadHostCPU reads /proc/stat under procRoot ("/proc").
func ReadHostCPU(procRoot string) (HostCPU, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, "stat"))
	if err != nil {
		return HostCPU{}, err
	}
	at := time.Now()
	line, _, _ := bytes.Cut(b, []byte("\n"))
	return parseProcStat(line, at)
}

// parseProcStat reads "cpu  user nice system idle iowait irq softirq steal
// guest guest_nice" (ticks of USER_HZ).
func parseProcStat(line []byte, at time.Time) (HostCPU, error) {
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return HostCPU{}, fmt.Errorf("/proc/stat: unexpected first line %.60q", line)
	}
	var v [8]uint64
	for i := range v {
		n, err := strconv.ParseUint(f[1+i], 10, 64)
		if err != nil {
			return HostCPU{}, fmt.Errorf("/proc/stat: field %d: %w", i+1, err)
		}
		v[i] = n * (1e9 / userHZ)
	}
	user, nice, system, idle, iowait, irq, softirq, steal := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
	return HostCPU{At: at, Busy: user + nice + system + irq + softirq, Steal: steal,
		Total: user + nice + system + idle + iowait + irq + softirq + steal}, nil
}

// ProcessCPU is the CPU time a process has used, user and system, in
// nanoseconds, from /proc/<pid>/stat (its threads included); 0 for a
// process that is gone.
func ProcessCPU(procRoot string, pid int) uint64 {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// The command may hold spaces and parentheses: the fields start after
	// the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	// After the command: state(3) ... utime(14) stime(15), counted from 1
	// with pid and comm as fields 1 and 2.
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseUint(f[11], 10, 64)
	st, _ := strconv.ParseUint(f[12], 10, 64)
	return (ut + st) * (1e9 / userHZ)
}

// RunDelay is how long a process's threads have waited, runnable, for a
// CPU, summed over them, in nanoseconds: the second field of each
// /proc/<pid>/task/<tid>/schedstat. ok is false where the kernel keeps no
// schedstat or the process is gone.
func RunDelay(procRoot string, pid int) (ns uint64, ok bool) {
	tasks, err := os.ReadDir(filepath.Join(procRoot, strconv.Itoa(pid), "task"))
	if err != nil {
		return 0, false
	}
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "task", t.Name(), "schedstat"))
		if err != nil {
			continue // the thread ended meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		n, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			continue
		}
		ns, ok = ns+n, true
	}
	return ns, ok
}

// enginePrograms are the engine's own processes: what they use while a run
// runs is the engine's work for it, not foreign load.
var enginePrograms = []string{"dockerd", "containerd", "containerd-shim", "containerd-shim-runc-v2", "runc", "docker-proxy"}

// EnginePids are the pids of the engine's processes on this host, found
// by their names in /proc/<pid>/comm.
func EnginePids(procRoot string) []int {
	dirs, _ := os.ReadDir(procRoot)
	var out []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(procRoot, d.Name(), "comm"))
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(b))
		for _, p := range enginePrograms {
			// comm is cut at 15 characters: "containerd-shim" stands for
			// every shim.
			if name == p || (len(p) > 15 && name == p[:15]) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// ReadsHostLoad says whether the server reads the engine host's own load:
// the engine is on this machine and its containers' cgroup files are read
// here.
func (h HostInfo) ReadsHostLoad() bool { return h.local && h.StatsSource == StatsCgroup }
