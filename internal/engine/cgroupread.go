package engine

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Read takes one reading of the container's counters. It fails once the
// container has exited and its cgroup is gone, or the reader is closed.
func (r *CgroupReader) Read() (Counters, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return Counters{}, errors.New("engine: cgroup reader closed")
	}
	if r.v2 {
		return r.readV2()
	}
	return r.readV1()
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
		return nil, fmt.Errorf("engine: no %s controller", controller)
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
		o, err := os.Open(dir + "/" + name)
		if err != nil {
			return nil, err
		}
		f = openFile{o, int(o.Fd())}
		r.files[key] = f
	}
	return readAt0(f.fd, name, &r.buf)
}

// readAt0 reads a file whole from offset 0 into *buf, growing it to fit,
// with one pread: os.File.ReadAt would read again at the end to find EOF,
// and a seq file (every cgroup and proc file) read at an offset other than
// where its last read ended is generated anew from its start to get there.
func readAt0(fd int, name string, buf *[]byte) ([]byte, error) {
	if len(*buf) == 0 {
		*buf = make([]byte, 4096)
	}
	for {
		n, err := syscall.Pread(fd, *buf, 0)
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

// atou parses a decimal without allocating.
func atou(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

// lines walks b's lines, and fields a line's space-separated fields,
// without allocating.
type lines struct{ b []byte }

func (l *lines) next() ([]byte, bool) {
	if len(l.b) == 0 {
		return nil, false
	}
	line := l.b
	if i := bytes.IndexByte(l.b, '\n'); i >= 0 {
		line, l.b = l.b[:i], l.b[i+1:]
	} else {
		l.b = nil
	}
	return line, true
}

type fields struct{ b []byte }

func (f *fields) next() ([]byte, bool) {
	f.b = bytes.TrimLeft(f.b, " \t")
	if len(f.b) == 0 {
		return nil, false
	}
	w := f.b
	if i := bytes.IndexAny(f.b, " \t"); i >= 0 {
		w, f.b = f.b[:i], f.b[i:]
	} else {
		f.b = nil
	}
	return w, true
}

// kvLines walks "key value" lines, as cpu.stat, memory.stat and
// cpuacct.stat hold them.
type kvLines struct{ ls lines }

// next is the next line's key and numeric value; ok is false at the end.
func (s *kvLines) next() (k []byte, v uint64, ok bool) {
	for {
		line, more := s.ls.next()
		if !more {
			return nil, 0, false
		}
		k, vb, found := bytes.Cut(line, []byte(" "))
		if !found {
			continue
		}
		if n, isNum := atou(bytes.TrimSpace(vb)); isNum {
			return k, n, true
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
	if b, err := r.readFile(r.dirs["cpuacct"], "cpuacct.stat"); err == nil {
		for kv := (kvLines{lines{b}}); ; {
			k, v, ok := kv.next()
			if !ok {
				break
			}
			switch string(k) {
			case "user":
				c.UserNs = v * (1e9 / clockTicks)
			case "system":
				c.SysNs = v * (1e9 / clockTicks)
			}
		}
	}
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
	usage, _ := r.readUint(r.dirs["memory"], "memory.usage_in_bytes")
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
	c.Pids, _ = r.readUint(r.dirs["pids"], "pids.current")
	return c, nil
}

// parseBlkioV1 sums a v1 blkio file ("8:0 Read 4096" per line) by op,
// case-insensitively like calculateBlockIO.
func parseBlkioV1(b []byte) (read, write uint64) {
	for ls := (lines{b}); ; {
		line, ok := ls.next()
		if !ok {
			return read, write
		}
		fs := fields{line}
		_, ok1 := fs.next()
		op, ok2 := fs.next()
		num, ok3 := fs.next()
		if !ok1 || !ok2 || !ok3 {
			continue
		}
		n, isNum := atou(num)
		switch {
		case !isNum:
		case bytes.EqualFold(op, []byte("read")):
			read += n
		case bytes.EqualFold(op, []byte("write")):
			write += n
		}
	}
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
	usage, _ := r.readUint(d, "memory.current")
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
	c.Pids, _ = r.readUint(d, "pids.current")
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

// parsePressure reads the "some" line's total of a PSI file
// ("some avg10=0.00 avg60=0.00 avg300=0.00 total=12345"), in microseconds.
func parsePressure(b []byte) (uint64, bool) {
	for ls := (lines{b}); ; {
		line, ok := ls.next()
		if !ok {
			return 0, false
		}
		fs := fields{line}
		if first, _ := fs.next(); string(first) != "some" {
			continue
		}
		for {
			w, ok := fs.next()
			if !ok {
				break
			}
			if v, found := bytes.CutPrefix(w, []byte("total=")); found {
				return atou(v)
			}
		}
	}
}

// parseIOStatV2 sums a v2 io.stat file
// ("8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0" per device).
func parseIOStatV2(b []byte) (rbytes, wbytes, rios, wios uint64) {
	for ls := (lines{b}); ; {
		line, ok := ls.next()
		if !ok {
			return
		}
		for fs := (fields{line}); ; {
			w, ok := fs.next()
			if !ok {
				break
			}
			k, v, found := bytes.Cut(w, []byte("="))
			n, isNum := atou(v)
			if !found || !isNum {
				continue
			}
			switch string(k) {
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
}
