package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Reading a container's cgroup files costs a few syscalls; the engine's
// stats endpoint costs the daemon several milliseconds of CPU per call (see
// docs/benchmarks.md). A lab must not become the noisy neighbour it
// measures, so the runner reads the files wherever it can see them.
//
// Layouts (https://docs.kernel.org/admin-guide/cgroup-v1/ and
// https://docs.kernel.org/admin-guide/cgroup-v2.html):
//   - v1, cgroupfs driver: <root>/<controller>/docker/<id>
//   - v1, systemd driver:  <root>/<controller>/system.slice/docker-<id>.scope
//   - v2, cgroupfs driver: <root>/docker/<id>
//   - v2, systemd driver:  <root>/system.slice/docker-<id>.scope

// clockTicks is USER_HZ, the unit of cpuacct.stat. It is 100 on every Linux
// architecture Docker supports.
const clockTicks = 100

// CgroupReader reads one container's counters from its cgroup files. It
// opens each file once and re-reads it from offset 0 (pread) on every
// reading, into a buffer that grows to fit, and parses without allocating
// ("every file is opened once; to read updated contents, we rewind it and
// read again", as Netdata's procfile does). Close it when the container
// has ended. Its methods may be called from several goroutines.
type CgroupReader struct {
	v2 bool
	// v1: one directory per controller; v2: dirs["unified"].
	dirs map[string]string
	root string
	// outer is, for a pod's container, its pod's cgroup (v1: in the cpu
	// hierarchy). kubelet gives the pod a CFS quota of its own, the sum of
	// its containers' limits, and the kernel throttles whichever level
	// runs out first: the container's throttling is counted at either.
	outer string

	mu    sync.Mutex
	files map[[2]string]openFile // by directory and name, opened on first use
	// absent are the files that did not exist when first asked for (PSI
	// on a kernel without it, io.stat without the io controller): a
	// cgroup's files are fixed when it is made, so they are not looked
	// for again at every tick.
	absent map[[2]string]error
	buf    []byte
	closed bool
	slow   slowFiles
}

// openFile is a cgroup file kept open, with its descriptor: os.File.Fd
// makes a system call each time it is asked.
type openFile struct {
	f  *os.File
	fd int
}

// openRead opens path for reading, its descriptor taken once: os.File.Fd
// asks the kernel for the file's flags at every call (an fcntl the Go
// scheduler sees, which wakes its monitor thread; see ReadAt0).
func openRead(path string) (openFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return openFile{}, err
	}
	return openFile{f, int(f.Fd())}, nil
}

// read re-reads the file from its start into *buf (ReadAt0).
func (o openFile) read(buf *[]byte) ([]byte, error) { return ReadAt0(o.fd, o.f.Name(), buf) }

var v1Controllers = []string{"cpuacct", "cpu", "memory", "blkio", "pids"}

// Path is the container's cgroup as the kernel names it
// (/kubepods/burstable/pod…/…, /docker/…): v2's one directory, or v1's cpu
// hierarchy's.
func (r *CgroupReader) Path() string {
	d, c := r.dirs["unified"], ""
	if !r.v2 {
		d, c = r.dirs["cpu"], "cpu"
	}
	rel, err := filepath.Rel(filepath.Join(r.root, c), d)
	if err != nil {
		return ""
	}
	return "/" + rel
}

// v1Optional are hierarchies the readings do not need, kept where present
// for reading limits back (cpuset.cpus).
var v1Optional = []string{"cpuset"}

// FindCgroup locates a container's cgroup under root (normally
// /sys/fs/cgroup, or wherever the host's is mounted read-only). pid, when
// non-zero and visible in /proc, lets it follow any driver or parent; on
// v1 each controller's path is the process's own, since a hierarchy may
// nest it under another parent (a memory cgroup the engine was started
// in, say).
func FindCgroup(root, id string, pid int) (*CgroupReader, error) {
	v2 := fileExists(filepath.Join(root, "cgroup.controllers"))
	defaults := []string{"docker/" + id, "system.slice/docker-" + id + ".scope"}
	var own map[string]string // by controller ("" on v2)
	if pid > 0 {
		own, _ = procCgroupPaths(pid)
	}
	// candidates are the paths to try for a controller, the process's
	// own first.
	candidates := func(c string) []string {
		if p, ok := own[c]; ok && strings.Contains(p, id) {
			return append([]string{strings.TrimPrefix(p, "/")}, defaults...)
		}
		return defaults
	}
	r := &CgroupReader{v2: v2, root: root, dirs: map[string]string{}, files: map[[2]string]openFile{}}
	if v2 {
		for _, rel := range candidates("") {
			if d := filepath.Join(root, rel); fileExists(filepath.Join(d, "cpu.stat")) {
				r.dirs["unified"] = d
				return r, nil
			}
		}
		return nil, fmt.Errorf("engine: no cgroup of container %.12s under %s", id, root)
	}
	for _, c := range append(slices.Clone(v1Controllers), v1Optional...) {
		for _, rel := range candidates(c) {
			if d := filepath.Join(root, c, rel); fileExists(d) {
				r.dirs[c] = d
				break
			}
		}
		if r.dirs[c] == "" && slices.Contains(v1Controllers, c) {
			return nil, fmt.Errorf("engine: no %s cgroup of container %.12s under %s", c, id, root)
		}
	}
	return r, nil
}

// procCgroupPaths reads a process's cgroup paths from /proc/<pid>/cgroup:
// by controller on v1 ("cpu,cpuacct" lines give both), "" for v2's.
func procCgroupPaths(pid int) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
