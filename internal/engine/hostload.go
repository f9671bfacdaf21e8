package engine

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// The host's own load, read from /proc on the engine's host (this
// machine, for a local engine): what else used the CPUs while a run ran,
// and how long each lane's threads waited for one. A verdict the host's
// noise could have decided says so (models.NoiseEffect).

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

// A ProcReader reads /proc/stat and processes' stat files at each tick,
// keeping them open between reads and reading each again from its start
// (the kernel makes it anew for each read at offset 0): an open by path
// (a lookup of the process in /proc) cost about 16 µs a file, and a tick
// reads one for every engine process.
type ProcReader struct {
	root  string
	stat  *openFile
	procs map[int]openFile
	buf   []byte
}

func NewProcReader(procRoot string) *ProcReader {
	return &ProcReader{root: procRoot, procs: map[int]openFile{}, buf: make([]byte, 4096)}
}

// HostCPU reads the first line of /proc/stat.
func (p *ProcReader) HostCPU() (HostCPU, error) {
	if p.stat == nil {
		f, err := openRead(filepath.Join(p.root, "stat"))
		if err != nil {
			return HostCPU{}, err
		}
		p.stat = &f
	}
	b, err := p.stat.read(&p.buf)
	if err != nil {
		return HostCPU{}, err
	}
	at := time.Now()
	line, _, _ := bytes.Cut(b, []byte("\n"))
	return parseProcStat(line, at)
}

// ProcessCPU is the CPU time the process pid has used, user and system,
// in nanoseconds (its threads included); ok is false for a process that
// is gone.
func (p *ProcReader) ProcessCPU(pid int) (ns uint64, ok bool) {
	f, open := p.procs[pid]
	if !open {
		var err error
		if f, err = openRead(filepath.Join(p.root, strconv.Itoa(pid), "stat")); err != nil {
			return 0, false
		}
		p.procs[pid] = f
	}
	b, err := f.read(&p.buf)
	if err != nil || len(b) == 0 {
		f.f.Close() // gone
		delete(p.procs, pid)
		return 0, false
	}
	ns, _ = statTimes(b) // 0 for a line without them
	return ns, true
}

// Retain closes the stat files of processes other than pids.
func (p *ProcReader) Retain(pids ...[]int) {
	keep := map[int]bool{}
	for _, l := range pids {
		for _, pid := range l {
			keep[pid] = true
		}
	}
	for pid, f := range p.procs {
		if !keep[pid] {
			f.f.Close()
			delete(p.procs, pid)
		}
	}
}

// Close closes every file it holds.
func (p *ProcReader) Close() {
	if p.stat != nil {
		p.stat.f.Close()
		p.stat = nil
	}
	p.Retain()
}

// Processes calls f with each process on this host: its pid, command and
// CPU time (user and system) in nanoseconds, as its /proc/<pid>/stat says.
func Processes(f func(pid int, comm string, cpuNs uint64)) {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		if comm, ns, ok := ProcStat(b); ok {
			f(pid, comm, ns)
		}
	}
}

// ProcStat reads a /proc/<pid>/stat line: the process's command and its
// CPU time, user and system, in nanoseconds.
func ProcStat(b []byte) (comm string, cpuNs uint64, ok bool) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	ns, ok := statTimes(b)
	if !ok {
		return "", 0, false
	}
	return string(b[open+1 : end]), ns, true
}

// statTimes is utime plus stime of a /proc/<pid>/stat line, in
// nanoseconds: after the command, state(3) ... utime(14) stime(15),
// counted from 1 with pid and comm as fields 1 and 2. One walk of the
// line, without allocating.
func statTimes(b []byte) (ns uint64, ok bool) {
	ut, st, ok := statFieldPair(b, 11)
	return (ut + st) * (1e9 / userHZ), ok
}

// statFieldPair is the numeric fields k and k+1 of a /proc/<pid>/stat
// line, counted from 0 at the state (field 3) after the command, which
// may hold spaces and parentheses: the fields start after the last ')'.
// It does not allocate: the engine's processes' stat files are read at
// every tick.
func statFieldPair(b []byte, k int) (a, next uint64, ok bool) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0, 0, false
	}
	f := fields{bytes.TrimRight(b[end+1:], "\n")}
	for i := 0; i <= k+1; i++ {
		w, more := f.next()
		if !more {
			return 0, 0, false
		}
		switch i {
		case k:
			a, ok = atou(w)
		case k + 1:
			var ok2 bool
			next, ok2 = atou(w)
			ok = ok && ok2
		}
	}
	return a, next, ok
}

// A DelayReader reads a process's run delay at each tick: how long its
// threads have waited, runnable, for a CPU, summed over them, in
// nanoseconds (the second field of each /proc/<pid>/task/<tid>/schedstat;
// none where the kernel keeps no schedstat or the process is gone). It
// keeps the threads' schedstat files open between reads: opening
// them by path each time (a lookup of the process and the thread in
// /proc) cost about 90 µs a lane per tick, five times the rest of a
// lane's sample. The threads are listed again only when their number
// has changed, which the task directory's link count says (procfs
// counts a process's threads in it) for one fstat; a thread found then
// adds all the delay it had.
type DelayReader struct {
	dir     string
	files   map[string]openFile
	task    *openFile // dir, kept open for its link count
	threads uint64    // the link count when the threads were last listed
	buf     []byte
}

func NewDelayReader(procRoot string, pid int) *DelayReader {
	return &DelayReader{dir: filepath.Join(procRoot, strconv.Itoa(pid), "task"), files: map[string]openFile{}, buf: make([]byte, 128)}
}

// Read sums the run delay of the process's threads.
func (d *DelayReader) Read() (ns uint64, ok bool) {
	if n := d.linkCount(); n == 0 || n != d.threads {
		d.list()
		d.threads = n
	}
	for tid, f := range d.files {
		b, err := f.read(&d.buf)
		if err != nil || len(b) == 0 {
			f.f.Close() // the thread ended: another may have taken its place
			delete(d.files, tid)
			d.threads = 0
			continue
		}
		// "<on-cpu ns> <run delay ns> <timeslices>": the second field,
		// read without splitting the line.
		_, rest, _ := bytes.Cut(b, []byte(" "))
		field, _, _ := bytes.Cut(rest, []byte(" "))
		v, isNum := atou(field)
		if !isNum {
			continue
		}
		ns, ok = ns+v, true
	}
	return ns, ok
}

// linkCount is the task directory's link count, 0 where it cannot be had.
func (d *DelayReader) linkCount() uint64 {
	if d.task == nil {
		f, err := openRead(d.dir)
		if err != nil {
			return 0
		}
		d.task = &f
	}
	// A raw fstat, as ReadAt0's pread: procfs answers it on the spot.
	var st syscall.Stat_t
	if _, _, e := syscall.RawSyscall(syscall.SYS_FSTAT, uintptr(d.task.fd), uintptr(unsafe.Pointer(&st)), 0); e != 0 {
		return 0
	}
	return uint64(st.Nlink)
}

// list opens the schedstat files of threads not yet open.
func (d *DelayReader) list() {
	tasks, err := os.ReadDir(d.dir)
	if err != nil {
		return
	}
	for _, t := range tasks {
		if _, open := d.files[t.Name()]; open {
			continue
		}
		if f, err := openRead(filepath.Join(d.dir, t.Name(), "schedstat")); err == nil {
			d.files[t.Name()] = f
		}
	}
}

// Close closes the files it holds.
func (d *DelayReader) Close() {
	if d.task != nil {
		d.task.f.Close()
		d.task = nil
	}
	for tid, f := range d.files {
		f.f.Close()
		delete(d.files, tid)
	}
}

// ReadsHostLoad says whether the server reads the engine host's own load:
// the engine is on this machine and its containers' cgroup files are read
// here.
func (h HostInfo) ReadsHostLoad() bool { return h.local && h.StatsSource == StatsCgroup }
