package workload

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/limitlab/limitlab/internal/workload/wire"
)

// setGOMAXPROCS applies the http workload's gomaxprocs setting: "auto"
// keeps the runtime's own choice (since Go 1.25 it follows the cgroup's CPU
// quota), "host" uses every CPU the process may run on, as older runtimes
// did whatever the quota, and a number is used as it is.
func setGOMAXPROCS(v string) (int, error) {
	switch v {
	case "", "auto":
	case "host":
		runtime.GOMAXPROCS(runtime.NumCPU())
	default:
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("gomaxprocs %q: want auto, host or a positive number", v)
		}
		runtime.GOMAXPROCS(n)
	}
	return runtime.GOMAXPROCS(0), nil
}

// burner does a fixed amount of CPU work per call, calibrated at start-up
// so that one unit takes about a microsecond of CPU on this machine. A
// fixed amount of work, not a fixed time, is what a real handler costs: under
// throttling it takes longer, it does not do less.
type burner struct{ perMicro float64 }

func newBurner() burner {
	best := 0.0
	var sink [32]byte
	for range 20 {
		start := time.Now()
		n := 0
		for time.Since(start) < time.Millisecond {
			for range 64 {
				sink = sha256.Sum256(sink[:])
			}
			n += 64
		}
		// The fastest burst is one that was not throttled or preempted.
		best = max(best, float64(n)/float64(time.Since(start).Microseconds()))
	}
	return burner{perMicro: best}
}

func (b burner) burn(micros int) {
	var sink [32]byte
	for range int(b.perMicro * float64(micros)) {
		sink = sha256.Sum256(sink[:])
	}
	_ = sink
}

// httpWork serves requests on port for the given seconds, or until SIGTERM
// (docker stop) when seconds is 0, burning workUS of CPU and allocating
// allocKB per request. Either way it ends cleanly, so its summary is
// printed.
func httpWork(port, workUS, allocKB int, seconds float64, c *counter) (string, error) {
	b := newBurner()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if allocKB > 0 {
			buf := make([]byte, allocKB<<10)
			for i := 0; i < len(buf); i += 4096 {
				buf[i] = 1
			}
		}
		b.burn(workUS)
		c.add(1)
		io.WriteString(w, "ok\n")
	})
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	// The server lives until the seconds are up or the process is killed.
	go func() { errc <- srv.Serve(ln) }()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(stop)
	var timeout <-chan time.Time
	if seconds > 0 {
		timeout = time.After(time.Duration(seconds * float64(time.Second)))
	}
	select {
	case <-timeout:
	case <-stop:
	case err := <-errc:
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
	return fmt.Sprintf("served with GOMAXPROCS=%d", runtime.GOMAXPROCS(0)), nil
}

// waitReady polls target until it answers, so that a service's start-up
// is not counted as failed requests.
func waitReady(client *http.Client, target string, within time.Duration) error {
	deadline := time.Now().Add(within)
	delay := 20 * time.Millisecond
	for {
		res, err := client.Get(target)
		if err == nil {
			res.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("target %s did not answer within %s: %w", target, within, err)
		}
		time.Sleep(delay)
		delay = min(2*delay, 500*time.Millisecond)
	}
}

// loadWork sends requests to target, in the spirit of `ab -n requests -c
// concurrency` (closed loop), or at a constant rate (open loop: latency is
// measured from when each request was due, so an overloaded service shows
// its queueing honestly). It stops after the requests or the seconds,
// whichever comes first (0: no limit).
//
// With burst > 1 the open loop sends burst requests at once, rate/burst
// times a second: the same average rate, in bursts.
func loadWork(target string, requests, concurrency, burst int, rate, seconds float64, s *loadStats, c *counter) (string, error) {
	client := &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: max(concurrency, 64), MaxConnsPerHost: 0},
	}
	if err := waitReady(client, target, 20*time.Second); err != nil {
		return "", &failure{kind: wire.FailureUnanswered, err: err}
	}
	var deadline time.Time
	if seconds > 0 {
		deadline = time.Now().Add(time.Duration(seconds * float64(time.Second)))
	}
	expired := func() bool { return !deadline.IsZero() && time.Now().After(deadline) }
	one := func(due time.Time) {
		res, err := client.Get(target)
		ok := err == nil && res.StatusCode == http.StatusOK
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
		s.record(time.Since(due), ok)
		c.add(1)
	}
	var issued atomic.Int64
	var wg sync.WaitGroup
	if rate > 0 {
		burst = max(burst, 1)
		interval := time.Duration(float64(time.Second) * float64(burst) / rate)
		start := time.Now()
		for k := 0; requests == 0 || k < requests; k++ {
			due := start.Add(time.Duration(k/burst) * interval)
			if expired() || stopping.Load() {
				break
			}
			time.Sleep(time.Until(due))
			s.sent(time.Since(due))
			wg.Add(1)
			go func() { defer wg.Done(); one(due) }()
			issued.Add(1)
		}
	} else {
		for range max(concurrency, 1) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for (requests == 0 || issued.Add(1) <= int64(requests)) && !expired() && !stopping.Load() {
					one(time.Now())
				}
			}()
		}
	}
	wg.Wait()
	n := s.count()
	if n == 0 {
		return "", errors.New("no request completed")
	}
	if rate > 0 {
		return fmt.Sprintf("%d requests, %d failed, %d sent late", n, s.failures.Load(), s.late.Load()), nil
	}
	return fmt.Sprintf("%d requests, %d failed", n, s.failures.Load()), nil
}
