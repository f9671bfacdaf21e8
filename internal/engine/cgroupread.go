package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

// Read takes one reading of the container's counters. It fails once the
// container has exited and its cgroup is gone, or the reader is closed.
func (r *CgroupReader) Read() (Counters, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return Counters{}, errors.New("engine: cgroup reader closed")
	}
	var c Counters
	var err error
	if r.v2 {
		c, err = r.readV2()
	} else {
		c, err = r.readV1()
	}
	if err == nil && r.outer != "" {
		r.addOuterThrottling(&c)
	}
	return c, err
}

// addOuterThrottling counts the throttling of the pod's cgroup with its
// container's. Each level counts the time its own quota kept the threads
// off their CPUs, and the two levels' periods start at different moments,
// so the time throttled at either is at least the larger count and at
// most their sum (where both count one moment). The larger is taken: the
// least the threads were throttled, never a moment twice. The pod's
// periods are kept beside the container's, never mixed with them
// (Counters.Throttling).
func (r *CgroupReader) addOuterThrottling(c *Counters) {
	b, err := r.readFile(r.outer, "cpu.stat")
	if err != nil {
		return
	}
	for kv := (kvLines{lines{b}}); ; {
		k, v, ok := kv.next()
		if !ok {
			break
		}
		switch string(k) {
		case "nr_periods":
			c.OuterPeriods = v
		case "nr_throttled":
			c.OuterThrottledPeriods = v
		case "throttled_time": // v1, in ns
			c.ThrottledNs = max(c.ThrottledNs, v)
		case "throttled_usec": // v2
			c.ThrottledNs = max(c.ThrottledNs, v*1000)
		}
	}
}

// Close closes the files the reader keeps open.
func (r *CgroupReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	var errs []error
	for p, f := range r.files {
		errs = append(errs, f.f.Close())
		delete(r.files, p)
	}
	return errors.Join(errs...)
}

// File reads one of the container's cgroup files: by controller on v1
// ("blkio", "cpu", ...), from its one directory on v2.
func (r *CgroupReader) File(controller, name string) ([]byte, error) {
	dir := r.dirs[controller]
	if r.v2 {
		dir = r.dirs["unified"]
	}
	if dir == "" {
		return nil, fmt.Errorf("engine: no %s controller: %w", controller, fs.ErrNotExist)
	}
	return os.ReadFile(filepath.Join(dir, name))
}

// readFile re-reads a cgroup file from its start into the reader's buffer;
// the result is valid until the next call. The kernel generates a cgroup
// file's contents anew on each read at offset 0.
func (r *CgroupReader) readFile(dir, name string) ([]byte, error) {
	key := [2]string{dir, name}
	f, ok := r.files[key]
	if !ok {
		if err, gone := r.absent[key]; gone {
			return nil, err
		}
		o, err := openRead(dir + "/" + name)
		if errors.Is(err, fs.ErrNotExist) {
			if r.absent == nil {
				r.absent = map[[2]string]error{}
			}
			r.absent[key] = err
		}
		if err != nil {
			return nil, err
		}
		f = o
		r.files[key] = f
	}
	return f.read(&r.buf)
}

// ReadAt0 reads a file whole from offset 0 into *buf, growing it to fit,
// with one pread: os.File.ReadAt would read again at the end to find EOF,
// and a seq file (every cgroup and proc file) read at an offset other than
// where its last read ended is generated anew from its start to get there.
//
// The pread is a raw system call, which the Go scheduler does not see. A
// system call it sees wakes its monitor thread (sysmon) if that was asleep,
// and the monitor then polls every 20 µs for a millisecond before it
// sleeps again: on this VM, some 25 nanosleeps for each tick of a run's
// sampler (strace), more CPU than the files themselves. The files read
// here never wait: the kernel generates cgroup and proc files on the spot,
// and a workload's progress file was written a moment ago and is in the
// page cache. The worst a slow read does is hold its thread's P meanwhile.
func ReadAt0(fd int, name string, buf *[]byte) ([]byte, error) {
	if len(*buf) == 0 {
		*buf = make([]byte, 4096)
	}
	for {
		n, err := pread(fd, *buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "pread", Path: name, Err: err}
		}
		if n == len(*buf) {
			*buf = make([]byte, 2*len(*buf)) // it may hold more: read it whole
			continue
		}
		return (*buf)[:n], nil
	}
}

// pread reads from offset 0 of fd into buf with a raw system call.
func pread(fd int, buf []byte) (int, error) {
	n, _, e := syscall.RawSyscall6(syscall.SYS_PREAD64, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// readUint reads a file of one number; "max" is no limit, read as 0.
func (r *CgroupReader) readUint(dir, name string) (uint64, error) {
	b, err := r.readFile(dir, name)
	if err != nil {
		return 0, err
	}
	b = bytes.TrimSpace(b)
	if string(b) == "max" {
		return 0, nil
	}
	n, ok := atou(b)
	if !ok {
		return 0, fmt.Errorf("engine: %s/%s: not a number: %q", dir, name, b)
	}
	return n, nil
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
	c.UserNs, c.SysNs = r.slow.cpuSplit(c.At, func() (user, sys uint64, ok bool) {
		b, err := r.readFile(r.dirs["cpuacct"], "cpuacct.stat")
		if err != nil {
			return 0, 0, false
		}
		for kv := (kvLines{lines{b}}); ; {
			k, v, more := kv.next()
			if !more {
				return user, sys, true
			}
			switch string(k) {
			case "user":
				user = v * (1e9 / clockTicks)
			case "system":
				sys = v * (1e9 / clockTicks)
			}
		}
	})
	if b, err := r.readFile(r.dirs["cpu"], "cpu.stat"); err == nil {
		for kv := (kvLines{lines{b}}); ; {
			k, v, ok := kv.next()
			if !ok {
				break
			}
			switch string(k) {
			case "nr_periods":
				c.Periods = v
			case "nr_throttled":
				c.ThrottledPeriods = v
			case "throttled_time":
				c.ThrottledNs = v
			}
		}
	}
	usage := r.slow.usage.read(c.At, func() (uint64, error) { return r.readUint(r.dirs["memory"], "memory.usage_in_bytes") })
	inactive, totalInactive, hasTotal := r.slow.memStat(c.At, usage, func() (in, tot uint64, has, ok bool) {
		b, err := r.readFile(r.dirs["memory"], "memory.stat")
		if err != nil {
			return 0, 0, false, false
		}
		for kv := (kvLines{lines{b}}); ; {
			k, v, more := kv.next()
			if !more {
				return in, tot, has, true
			}
			switch string(k) {
			case "total_inactive_file":
				tot, has = v, true
			case "inactive_file":
				in = v
			}
		}
	})
	c.MemBytes = memNoCache(usage, totalInactive, hasTotal, inactive)
	c.MemLimit = r.slow.memLimit(c.At, func() (uint64, error) {
		return r.readUint(r.dirs["memory"], "memory.limit_in_bytes")
	})
	if c.MemLimit >= 1<<62 {
		c.MemLimit = 0 // v1 writes "no limit" as a page-rounded max int64
	}
	if b, err := r.readFile(r.dirs["blkio"], "blkio.throttle.io_serviced"); err == nil {
		c.ReadOps, c.WriteOps = parseBlkioV1(b)
	}
	c.ReadBytes, c.WriteBytes = r.slow.ioBytes(c.At, c.ReadOps+c.WriteOps, func() (uint64, uint64, bool) {
		b, err := r.readFile(r.dirs["blkio"], "blkio.throttle.io_service_bytes")
		if err != nil {
			return 0, 0, false
		}
		rb, wb := parseBlkioV1(b)
		return rb, wb, true
	})
	c.Pids = r.slow.pids.read(c.At, func() (uint64, error) { return r.readUint(r.dirs["pids"], "pids.current") })
	return c, nil
}

func (r *CgroupReader) readV2() (Counters, error) {
	var c Counters
	d := r.dirs["unified"]
	b, err := r.readFile(d, "cpu.stat")
	if err != nil {
		return c, err
	}
	c.At = time.Now()
	for kv := (kvLines{lines{b}}); ; {
		k, v, ok := kv.next()
		if !ok {
			break
		}
		switch string(k) {
		case "usage_usec":
			c.CPUNs = v * 1000
		case "user_usec":
			c.UserNs = v * 1000
		case "system_usec":
			c.SysNs = v * 1000
		case "nr_periods":
			c.Periods = v
		case "nr_throttled":
			c.ThrottledPeriods = v
		case "throttled_usec":
			c.ThrottledNs = v * 1000
		}
	}
	usage := r.slow.usage.read(c.At, func() (uint64, error) { return r.readUint(d, "memory.current") })
	inactive, _, _ := r.slow.memStat(c.At, usage, func() (in, tot uint64, has, ok bool) {
		b, err := r.readFile(d, "memory.stat")
		if err != nil {
			return 0, 0, false, false
		}
		for kv := (kvLines{lines{b}}); ; {
			k, v, more := kv.next()
			if !more {
				return in, 0, false, true
			}
			if string(k) == "inactive_file" {
				in = v
			}
		}
	})
	c.MemBytes = memNoCache(usage, 0, false, inactive)
	c.MemLimit = r.slow.memLimit(c.At, func() (uint64, error) { return r.readUint(d, "memory.max") })
	if b, err := r.readFile(d, "io.stat"); err == nil {
		c.ReadBytes, c.WriteBytes, c.ReadOps, c.WriteOps = parseIOStatV2(b)
	}
	c.Pids = r.slow.pids.read(c.At, func() (uint64, error) { return r.readUint(d, "pids.current") })
	if b, err := r.readFile(d, "cpu.pressure"); err == nil {
		c.PressureUs, c.HasPressure = parsePressure(b)
	}
	if c.HasPressure {
		if b, err := r.readFile(d, "memory.pressure"); err == nil {
			c.MemPressureUs, _ = parsePressure(b)
		}
		if b, err := r.readFile(d, "io.pressure"); err == nil {
			c.IOPressureUs, _ = parsePressure(b)
		}
	}
	return c, nil
}

// TickFiles are the files a reading takes every time, whatever rests
// (cgroupslow.go): the least a sampler reads at each tick. The overhead
// benchmark reads them alone, at the sampler's rate, for the floor of a
// sample's cost (cmd/overhead).
func (r *CgroupReader) TickFiles() []string {
	var names []string
	if r.v2 {
		d := r.dirs["unified"]
		names = []string{d + "/cpu.stat", d + "/io.stat"}
		if fileExists(d + "/cpu.pressure") {
			names = append(names, d+"/cpu.pressure", d+"/memory.pressure", d+"/io.pressure")
		}
	} else {
		names = []string{r.dirs["cpuacct"] + "/cpuacct.usage", r.dirs["cpu"] + "/cpu.stat", r.dirs["blkio"] + "/blkio.throttle.io_serviced"}
	}
	if r.outer != "" {
		names = append(names, r.outer+"/cpu.stat")
	}
	return names
}

// WriteMemoryHigh gives the container memory.high of n bytes (cgroup v2):
// above it the kernel reclaims and slows the container's allocations
// rather than killing it. No engine has a flag for it, so the server
// writes it, into this container's own cgroup only, once it exists.
func (r *CgroupReader) WriteMemoryHigh(n int64) error {
	if !r.v2 || r.dirs["unified"] == "" {
		return errors.New("engine: memory.high is cgroup v2's, and the container has no v2 cgroup here")
	}
	return writeFile(filepath.Join(r.dirs["unified"], "memory.high"), strconv.FormatInt(n, 10))
}

// writeFile writes v into an existing cgroup file.
func writeFile(path, v string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	_, err = f.WriteString(v)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("engine: %s into %s: %w", v, path, err)
	}
	return nil
}

// WriteCPUBurst gives the container a CFS burst of us microseconds: the
// unused quota a period may carry over (cpu.cfs_burst_us on v1,
// cpu.max.burst on v2). No engine has a flag for it, so the server writes
// it, into this container's own cgroup only, once the container exists.
func (r *CgroupReader) WriteCPUBurst(us int64) error {
	dir, name := r.dirs["cpu"], "cpu.cfs_burst_us"
	if r.v2 {
		dir, name = r.dirs["unified"], "cpu.max.burst"
	}
	if dir == "" {
		return errors.New("engine: the container has no cpu cgroup here")
	}
	if err := writeFile(filepath.Join(dir, name), strconv.FormatInt(us, 10)); err != nil {
		return fmt.Errorf("a CFS burst: %w", err)
	}
	return nil
}
