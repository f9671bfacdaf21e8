package engine

import (
	"os"
	"strconv"
	"sync"

	"github.com/limitlab/limitlab/internal/workload/wire"
)

// ProgressReader reads a lane's latest progress record from the file the
// workload keeps in its container (wire.ProgressPath), through
// /proc/<pid>/root, so that progress does not pass through the engine's
// log stream. Like the cgroup reader it opens the file once, as soon as it
// exists, and re-reads it from offset 0 into one buffer. Its methods may
// be called from several goroutines.
type ProgressReader struct {
	path string

	mu     sync.Mutex
	f      *os.File
	fd     int
	buf    []byte
	lastT  float64
	closed bool // a Read after Close must not open the file again
}

// OpenProgress returns the reader of the progress file of the container
// whose process is pid; the file need not exist yet.
func OpenProgress(pid int) *ProgressReader {
	return &ProgressReader{path: ProgressPathOf(pid), buf: make([]byte, 4096)}
}

// ProgressPathOf is where the server sees the progress file of the
// container whose process is pid.
func ProgressPathOf(pid int) string {
	return "/proc/" + strconv.Itoa(pid) + "/root" + wire.ProgressPath
}

// Read returns the latest whole record, and whether it is newer than the
// one the last Read returned.
func (p *ProgressReader) Read() (wire.Progress, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return wire.Progress{}, false
	}
	if p.f == nil {
		f, err := os.Open(p.path)
		if err != nil {
			return wire.Progress{}, false // not written yet, or the lane is gone
		}
		p.f, p.fd = f, int(f.Fd())
	}
	b, err := ReadAt0(p.fd, p.path, &p.buf)
	if err != nil {
		return wire.Progress{}, false
	}
	rec, ok := wire.ParseRecord(b)
	if !ok || rec.T <= p.lastT {
		return wire.Progress{}, false
	}
	p.lastT = rec.T
	return rec, true
}

// Close closes the file.
func (p *ProgressReader) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.f == nil {
		return nil
	}
	err := p.f.Close()
	p.f = nil
	return err
}

// progressVisible says whether the server sees the files inside a running
// container through /proc/<pid>/root: it shares the engine's host and its
// process namespace, and may read other users' processes.
func progressVisible(pid int) bool {
	if pid <= 0 {
		return false
	}
	_, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/root/tmp")
	return err == nil
}
