// Package workload is the program that runs inside Limit Lab's containers.
// It is compiled into the server binary and started in the workload image as
// `limitlab workload KIND [flags]`. Each workload prints a JSON progress line
// at least four times a second and a final summary with wall time and the
// user and system CPU time the kernel accounted to it (getrusage).
package workload

import (
	"cmp"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/limitlab/limitlab/internal/workload/wire"
	"golang.org/x/sys/unix"
)

// ProgressInterval is how often a workload reports; the issue asks for at
// least four lines a second.
const ProgressInterval = 200 * time.Millisecond

// Main runs the workload named by args[0] and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if err := run(context.Background(), args, stdout); err != nil {
		if f := (*failure)(nil); errors.As(err, &f) {
			// The server reads why from the summary, not from the message.
			_ = json.NewEncoder(stdout).Encode(wire.Summary{Final: true, Failure: f.kind})
		}
		fmt.Fprintln(stderr, "workload:", err)
		return 2
	}
	return 0
}

// failure is an error whose kind the workload's summary names.
type failure struct {
	kind wire.FailureKind
	err  error
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// workBegan is when the first thread of the work began it, in Unix
// nanoseconds, for the workloads that say (firstWork); the others'
// work begins where their wall clock starts.
var workBegan atomic.Int64

func firstWork() { workBegan.CompareAndSwap(0, time.Now().UnixNano()) }

// stopping is set when the container is asked to stop (SIGTERM: docker
// stop, or the end of the lane's phase): the work loops end early and the
// workload still prints its summary.
var stopping atomic.Bool

func watchStop() func() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM)
	go func() {
		if _, ok := <-c; ok {
			stopping.Store(true)
		}
	}()
	return func() { signal.Stop(c); close(c) }
}

// counter is the work done so far, in micro-units (a 4 KiB read is
// 0.00390625 MiB), shared by the workers and the reporter.
type counter struct{ micro atomic.Int64 }

func (c *counter) add(units float64) { c.micro.Add(int64(math.Round(units * 1e6))) }
func (c *counter) get() float64      { return float64(c.micro.Load()) / 1e6 }

func run(ctx context.Context, args []string, stdout io.Writer) error {
	cmd, err := wire.Parse(args)
	if err != nil {
		return err
	}
	cmd = cmd.WithDefaults()
	j, err := jobOf(&cmd)
	if err != nil {
		return err
	}
	if err := j.prepare(); err != nil {
		return err
	}
	if cmd.Kind != "http" { // the service stops on SIGTERM by itself
		defer watchStop()()
	}
	enc := json.NewEncoder(stdout)
	report, closeReport, err := reporter(cmd.ProgressFile, enc)
	if err != nil {
		return err
	}
	defer closeReport()
	var c counter
	start := time.Now()
	if cmd.BeginFile != "" {
		// The work begins on the thread the barrier's timer wakes.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		start = awaitBegin(cmd.BeginFile)
	}
	// CPU time is counted from here, like wall time: the runtime's start-up
	// in a fresh container (page faults on the binary) is not the work.
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	// The reporter lives until the work is done and has printed its last
	// progress line.
	go func() {
		defer wg.Done()
		j.progress(ctx, &c, start, report)
	}()
	result, err := j.work(&c)
	cancel()
	wg.Wait()
	if err != nil {
		return err
	}
	wall := time.Since(start).Seconds()
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	done := c.get()
	sum := wire.Summary{
		Final: true, Kind: cmd.Kind, WallS: wall,
		UserS: tv(ru.Utime) - tv(ru0.Utime), SysS: tv(ru.Stime) - tv(ru0.Stime),
		Done: done, Unit: j.unit, Throughput: done / wall, Result: result, BeganAt: cmp.Or(workBegan.Load(), start.UnixNano()),
	}
	if j.load != nil {
		sum.Failures = j.load.failures.Load()
		sum.Latency = j.load.total()
	}
	if j.ops != nil {
		sum.Ops = j.ops.get()
		sum.IOPS = sum.Ops / wall
	}
	if j.runtimes != nil {
		sum.Runtimes = j.runtimes.rounds()
	}
	return enc.Encode(sum)
}

// awaitBegin waits for the file the server writes into every lane that
// begins with others, sleeps until the instant it names (on the host's
// clock, which every lane shares), and returns then: the kernel's timers
// wake every lane at that instant, not one by one as the server writes
// the files. It begins at once after wire.BeginWait without the file, or
// with a file that names no instant. It says it is ready
// (wire.ReadyPath, beside it) once it waits, and waits without using CPU
// time: inotify on the file's directory, so that no lane under a small
// quota is throttled when the file comes.
func awaitBegin(path string) time.Time {
	deadline := time.Now().Add(wire.BeginWait)
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err == nil {
		defer unix.Close(fd)
		if _, err = unix.InotifyAddWatch(fd, filepath.Dir(path), unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_CLOSE_WRITE); err != nil {
			fd = -1
		}
	} else {
		fd = -1
	}
	ready := filepath.Join(filepath.Dir(path), filepath.Base(wire.ReadyPath))
	_ = os.WriteFile(ready, nil, 0o644)
	buf := make([]byte, 4096)
	var at time.Time
	for time.Now().Before(deadline) && !stopping.Load() {
		if b, err := os.ReadFile(path); err == nil {
			at = wire.ParseBegin(b)
			break
		}
		if fd < 0 {
			time.Sleep(time.Millisecond)
			continue
		}
		// An event, or a tenth of a second to look at the deadline and
		// the stop flag again.
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, _ := unix.Poll(pfd, 100); n > 0 {
			_, _ = unix.Read(fd, buf)
		}
	}
	if !at.IsZero() {
		ts := unix.NsecToTimespec(at.UnixNano())
		for unix.ClockNanosleep(unix.CLOCK_REALTIME, unix.TIMER_ABSTIME, &ts, nil) == unix.EINTR {
		}
	}
	return time.Now()
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// md5Work hashes mb MiB of pseudo-random bytes, the work of
// `dd if=/dev/urandom bs=1M count=N | md5sum` in the seeds, on one thread.
// The bytes come from a ChaCha8 generator in user space rather than from
// /dev/urandom: each 1 MiB read of the device is a long system call, during
// which the Go runtime hands the processor to a spinning thread, and the
// job then used about 1.12 CPUs instead of one (measured on the project's
// machine), which a --cpus 1 quota throttled.
func md5Work(mb int, c *counter) (string, error) {
	src := rand.NewChaCha8([32]byte{'l', 'i', 'm', 'i', 't', 'l', 'a', 'b'})
	h := md5.New()
	buf := make([]byte, 1<<20)
	firstWork()
	for range mb {
		if stopping.Load() {
			break
		}
		_, _ = src.Read(buf)
		h.Write(buf)
		c.add(1)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// primesWork follows sysbench's cpu test: each event counts the primes below
// maxPrime by trial division; threads take events until all are done.
func primesWork(threads, events, maxPrime int, c *counter) string {
	var next atomic.Int64
	var found atomic.Int64
	onThreads(threads, func() {
		for next.Add(1) <= int64(events) && !stopping.Load() {
			found.Store(int64(countPrimes(maxPrime)))
			c.add(1)
		}
	})
	return fmt.Sprintf("%d primes below %d", found.Load(), maxPrime)
}

// onThreads runs f on n OS threads of its own and waits for them all.
// The first runs on the caller's own thread, so that a lane let go by a
// start barrier begins its work on the thread the kernel woke, without
// waiting for another thread to be woken in turn.
func onThreads(n int, f func()) {
	if n < 1 {
		return
	}
	var wg sync.WaitGroup
	for range n - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			firstWork()
			f()
		}()
	}
	runtime.LockOSThread()
	firstWork()
	f()
	runtime.UnlockOSThread()
	wg.Wait()
}

func countPrimes(maxPrime int) int {
	n := 0
	for v := 3; v < maxPrime; v++ {
		t := int(math.Sqrt(float64(v)))
		l := 2
		for ; l <= t; l++ {
			if v%l == 0 {
				break
			}
		}
		if l > t {
			n++
		}
	}
	return n
}

// spinWork keeps threads busy for the given seconds, counting loops in
// millions.
func spinWork(threads int, seconds float64, c *counter) string {
	deadline := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	onThreads(threads, func() {
		x := uint64(1)
		for time.Now().Before(deadline) && !stopping.Load() {
			for range 1 << 16 {
				x = x*6364136223846793005 + 1442695040888963407
			}
			c.add(float64(1<<16) / 1e6)
		}
		_ = x
	})
	return ""
}

// memWork allocates mb MiB in 1 MiB steps at rate MiB/s (0: at once),
// writing every page so that it is resident, then holds it for seconds,
// touching it again each second. Under a smaller --memory limit the kernel's
// OOM killer ends it, which is the point.
func memWork(mb int, rate, seconds float64, c *counter) (string, error) {
	const page = 4096
	var chunks [][]byte
	start := time.Now()
	for i := range mb {
		if stopping.Load() {
			break
		}
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += page {
			b[j] = byte(i + 1)
		}
		chunks = append(chunks, b)
		c.add(1)
		if rate > 0 {
			due := start.Add(time.Duration(float64(i+1) / rate * float64(time.Second)))
			time.Sleep(time.Until(due))
		}
	}
	end := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	for time.Now().Before(end) && !stopping.Load() {
		for _, b := range chunks {
			for j := 0; j < len(b); j += page {
				b[j]++
			}
		}
		time.Sleep(min(time.Second, time.Until(end)))
	}
	return fmt.Sprintf("held %d MiB", len(chunks)), nil
}

// residentMB reads the resident set from /proc/self/statm.
func residentMB() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, resident int64
	if _, err := fmt.Sscan(string(b), &size, &resident); err != nil {
		return 0
	}
	return float64(resident*int64(os.Getpagesize())) / (1 << 20)
}
