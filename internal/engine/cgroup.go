package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

	mu     sync.Mutex
	files  map[[2]string]openFile // by directory and name, opened on first use
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

var v1Controllers = []string{"cpuacct", "cpu", "memory", "blkio", "pids"}

// v1Optional are hierarchies the readings do not need, kept where present
// for reading limits back (cpuset.cpus).
var v1Optional = []string{"cpuset"}

// FindCgroup locates a container's cgroup under root (normally
// /sys/fs/cgroup, or wherever the host's is mounted read-only). pid, when
// non-zero and visible in /proc, lets it follow any driver or parent.
func FindCgroup(root, id string, pid int) (*CgroupReader, error) {
	v2 := fileExists(filepath.Join(root, "cgroup.controllers"))
	rels := []string{"docker/" + id, "system.slice/docker-" + id + ".scope"}
	if pid > 0 {
		if rel, err := procCgroupPath(pid, v2); err == nil && strings.Contains(rel, id) {
			rels = append([]string{strings.TrimPrefix(rel, "/")}, rels...)
		}
	}
	for _, rel := range rels {
		r := &CgroupReader{v2: v2, dirs: map[string]string{}, files: map[[2]string]openFile{}}
		ok := true
		if v2 {
			d := filepath.Join(root, rel)
			ok = fileExists(filepath.Join(d, "cpu.stat"))
			r.dirs["unified"] = d
		} else {
			for _, c := range v1Controllers {
				d := filepath.Join(root, c, rel)
				if !fileExists(d) {
					ok = false
					break
				}
				r.dirs[c] = d
			}
			for _, c := range v1Optional {
				if d := filepath.Join(root, c, rel); ok && fileExists(d) {
					r.dirs[c] = d
				}
			}
		}
		if ok {
			return r, nil
		}
	}
	return nil, fmt.Errorf("engine: no cgroup of container %.12s under %s", id, root)
}

// procCgroupPath reads the cgroup path of a process from /proc/<pid>/cgroup:
// "0::<path>" on v2, the cpuacct line on v1.
func procCgroupPath(pid int, v2 bool) (string, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if v2 && parts[0] == "0" && parts[1] == "" {
			return parts[2], nil
		}
		if !v2 && strings.Contains(","+parts[1]+",", ",cpuacct,") {
			return parts[2], nil
		}
	}
	return "", errors.New("no matching line")
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
