package engine

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
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

// CgroupReader reads one container's counters from its cgroup files.
type CgroupReader struct {
	v2 bool
	// v1: one directory per controller; v2: dirs["unified"].
	dirs map[string]string
	buf  []byte
}

var v1Controllers = []string{"cpuacct", "cpu", "memory", "blkio", "pids"}

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
		r := &CgroupReader{v2: v2, dirs: map[string]string{}}
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

// Read takes one reading of the container's counters. It fails once the
// container has exited and its cgroup is gone.
func (r *CgroupReader) Read() (Counters, error) {
	if r.v2 {
		return r.readV2()
	}
	return r.readV1()
}

// File reads one of the container's cgroup files: by controller on v1
// ("blkio", "cpu", ...), from its one directory on v2.
func (r *CgroupReader) File(controller, name string) ([]byte, error) {
	dir := r.dirs[controller]
	if r.v2 {
		dir = r.dirs["unified"]
	}
	if dir == "" {
		return nil, fmt.Errorf("engine: no %s controller", controller)
	}
	return os.ReadFile(filepath.Join(dir, name))
}

// readFile reads a small cgroup file into the reader's buffer; the result is
// valid until the next call.
func (r *CgroupReader) readFile(dir, name string) ([]byte, error) {
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r.buf = r.buf[:0]
	for {
		if len(r.buf) == cap(r.buf) {
			r.buf = slices.Grow(r.buf, 4096)
		}
		n, err := f.Read(r.buf[len(r.buf):cap(r.buf)])
		r.buf = r.buf[:len(r.buf)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	return r.buf, nil
}

func (r *CgroupReader) readUint(dir, name string) (uint64, error) {
	b, err := r.readFile(dir, name)
	if err != nil {
		return 0, err
	}
	s := string(bytes.TrimSpace(b))
	if s == "max" {
		return 0, nil
	}
	return strconv.ParseUint(s, 10, 64)
}

// readKV reads a flat keyed file ("key value" per line) into m.
func (r *CgroupReader) readKV(dir, name string, m map[string]uint64) error {
	b, err := r.readFile(dir, name)
	if err != nil {
		return err
	}
	parseKV(b, m)
	return nil
}

func parseKV(b []byte, m map[string]uint64) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
			m[k] = n
		}
	}
}

// Each reading is stamped right after the CPU counter is read: CPU use is
// its difference over the stamps' difference, so the two must be taken
// together even when the sampler is descheduled between files.

func (r *CgroupReader) readV1() (Counters, error) {
	var c Counters
	var err error
	if c.CPUNs, err = r.readUint(r.dirs["cpuacct"], "cpuacct.usage"); err != nil {
		return c, err
	}
	c.At = time.Now()
	kv := map[string]uint64{}
	if err := r.readKV(r.dirs["cpuacct"], "cpuacct.stat", kv); err == nil {
		c.UserNs = kv["user"] * (1e9 / clockTicks)
		c.SysNs = kv["system"] * (1e9 / clockTicks)
	}
	clear(kv)
	if err := r.readKV(r.dirs["cpu"], "cpu.stat", kv); err == nil {
		c.Periods, c.ThrottledPeriods, c.ThrottledNs = kv["nr_periods"], kv["nr_throttled"], kv["throttled_time"]
	}
	usage, _ := r.readUint(r.dirs["memory"], "memory.usage_in_bytes")
	clear(kv)
	_ = r.readKV(r.dirs["memory"], "memory.stat", kv)
	c.MemBytes = calculateMemUsageUnixNoCache(usage, kv)
	c.MemLimit, _ = r.readUint(r.dirs["memory"], "memory.limit_in_bytes")
	if c.MemLimit >= 1<<62 {
		c.MemLimit = 0 // v1 writes "no limit" as a page-rounded max int64
	}
	if b, err := r.readFile(r.dirs["blkio"], "blkio.throttle.io_service_bytes"); err == nil {
		c.ReadBytes, c.WriteBytes = parseBlkioV1(b)
	}
	if b, err := r.readFile(r.dirs["blkio"], "blkio.throttle.io_serviced"); err == nil {
		c.ReadOps, c.WriteOps = parseBlkioV1(b)
	}
	c.Pids, _ = r.readUint(r.dirs["pids"], "pids.current")
	return c, nil
}

// parseBlkioV1 sums a v1 blkio file ("8:0 Read 4096" per line) by op,
// case-insensitively like calculateBlockIO.
func parseBlkioV1(b []byte) (read, write uint64) {
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		n, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			continue
		}
		switch strings.ToLower(f[1]) {
		case "read":
			read += n
		case "write":
			write += n
		}
	}
	return read, write
}

func (r *CgroupReader) readV2() (Counters, error) {
	var c Counters
	d := r.dirs["unified"]
	kv := map[string]uint64{}
	if err := r.readKV(d, "cpu.stat", kv); err != nil {
		return c, err
	}
	c.At = time.Now()
	c.CPUNs, c.UserNs, c.SysNs = kv["usage_usec"]*1000, kv["user_usec"]*1000, kv["system_usec"]*1000
	c.Periods, c.ThrottledPeriods, c.ThrottledNs = kv["nr_periods"], kv["nr_throttled"], kv["throttled_usec"]*1000
	usage, _ := r.readUint(d, "memory.current")
	clear(kv)
	_ = r.readKV(d, "memory.stat", kv)
	c.MemBytes = calculateMemUsageUnixNoCache(usage, kv)
	c.MemLimit, _ = r.readUint(d, "memory.max")
	if b, err := r.readFile(d, "io.stat"); err == nil {
		c.ReadBytes, c.WriteBytes, c.ReadOps, c.WriteOps = parseIOStatV2(b)
	}
	c.Pids, _ = r.readUint(d, "pids.current")
	if b, err := r.readFile(d, "cpu.pressure"); err == nil {
		c.PressureUs, c.HasPressure = parsePressure(b)
	}
	return c, nil
}

// parsePressure reads the "some" line's total of a PSI file
// ("some avg10=0.00 avg60=0.00 avg300=0.00 total=12345"), in microseconds.
func parsePressure(b []byte) (uint64, bool) {
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "some" {
			continue
		}
		for _, kv := range f[1:] {
			if v, ok := strings.CutPrefix(kv, "total="); ok {
				n, err := strconv.ParseUint(v, 10, 64)
				return n, err == nil
			}
		}
	}
	return 0, false
}

// parseIOStatV2 sums a v2 io.stat file
// ("8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0" per device).
func parseIOStatV2(b []byte) (rbytes, wbytes, rios, wios uint64) {
	for _, line := range strings.Split(string(b), "\n") {
		for _, kv := range strings.Fields(line) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				continue
			}
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				continue
			}
			switch k {
			case "rbytes":
				rbytes += n
			case "wbytes":
				wbytes += n
			case "rios":
				rios += n
			case "wios":
				wios += n
			}
		}
	}
	return
}
