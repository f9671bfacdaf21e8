package engine

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// BenchmarkReadsAtTicks reads 88 proc and cgroup files (a tick's worth for
// twelve v1 lanes and the host's figures) at each of a sampler's 250 ms
// ticks, with the scheduler seeing each pread (syscall.Pread) and with the
// raw pread the readers use. cpu-µs/tick is the process's CPU time,
// every thread's (getrusage): with the first, each tick wakes the Go
// runtime's monitor thread, which then polls for a millisecond.
//
//	go test ./internal/engine -run '^$' -bench ReadsAtTicks -benchtime 40x -count 2
func BenchmarkReadsAtTicks(b *testing.B) {
	paths := []string{"/proc/stat", "/proc/self/stat", "/proc/self/schedstat", "/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage",
		"/sys/fs/cgroup/cpu,cpuacct/cpu.stat", "/sys/fs/cgroup/memory/memory.usage_in_bytes", "/sys/fs/cgroup/pids/pids.current"}
	var fds []int
	for len(fds) < 88 {
		for _, p := range paths {
			if f, err := os.Open(p); err == nil {
				b.Cleanup(func() { f.Close() })
				fds = append(fds, int(f.Fd()))
			}
		}
	}
	fds = fds[:88]
	for _, bc := range []struct {
		name string
		read func(fd int, buf *[]byte) error
	}{
		{"scheduler-seen", func(fd int, buf *[]byte) error { _, err := syscall.Pread(fd, *buf, 0); return err }},
		{"raw", func(fd int, buf *[]byte) error { _, err := ReadAt0(fd, "", buf); return err }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			buf := make([]byte, 4096)
			tick := time.NewTicker(250 * time.Millisecond)
			defer tick.Stop()
			<-tick.C
			before := rusageNs(b)
			for b.Loop() {
				<-tick.C
				for _, fd := range fds {
					if err := bc.read(fd, &buf); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(rusageNs(b)-before)/1e3/float64(b.N), "cpu-µs/tick")
		})
	}
}

func rusageNs(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
