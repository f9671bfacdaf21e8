// Command soak drives a workshop room against the real server binary on
// loopback for a while (10 minutes by default) and reports what happened:
// runs served, refusals by reason, the server's RSS and CPU, the p99
// latency of the live viewers, and the containers and volumes left behind
// (which must be none). Each kind of client has loopback addresses of its
// own (127.0.x.y), as a room of machines would; the viewers watch the run
// a presenter client features.
//
//	go run ./cmd/soak -bin bin/limitlab -duration 10m -out docs/benchmarks.md
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/limitlab/limitlab/internal/benchdoc"
	"github.com/limitlab/limitlab/internal/testbed"
)

// presenterToken is the soak server's presenter token, joinCode its
// room's join code.
const (
	presenterToken = "soak-presenter-token-0123"
	joinCode       = "soak-room-4242"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

type config struct {
	bin                            string
	duration                       time.Duration
	participants, scripts, viewers int
	natted                         int
	out                            string
	// slowReaders read exports at 2 KB/s from the room's address;
	// rssBound is the server's memory the soak must not see passed.
	slowReaders int
	rssBound    int64
}

// every calls f every d until ctx ends.
func every(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

func run() error {
	var c config
	flag.StringVar(&c.bin, "bin", "bin/limitlab", "the server binary")
	flag.DurationVar(&c.duration, "duration", 10*time.Minute, "how long to drive the room")
	flag.IntVar(&c.participants, "participants", 50, "browser-like clients (cookies kept)")
	flag.IntVar(&c.natted, "natted", 50, "participants behind one address, each with the join code")
	flag.IntVar(&c.scripts, "scripts", 10, "scripts without cookies")
	flag.IntVar(&c.viewers, "viewers", 200, "live viewers")
	flag.StringVar(&c.out, "out", "", "write the report into this markdown file's soak section")
	flag.IntVar(&c.slowReaders, "slow-readers", 40, "clients reading exports at 2 KB/s from the room's address")
	rssBound := flag.Int64("rss-bound", 300, "the server's resident memory, in MiB, that the soak fails past")
	flag.Parse()
	c.rssBound = *rssBound << 20

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := startServer(ctx, c.bin)
	if err != nil {
		return err
	}
	defer srv.stop()
	if err := os.MkdirAll(filepath.Join(srv.dir, "nginx"), 0o700); err != nil {
		return err
	}
	proxy, err := testbed.StartNginx(filepath.Join(srv.dir, "nginx"), freePort(), strings.TrimPrefix(srv.base, "http://"))
	if err != nil {
		return err
	}
	defer proxy.Stop()
	proxied := "https://" + proxy.Addr
	log.Printf("server %s (pid %d), behind nginx at %s; driving the room for %s", srv.base, srv.cmd.Process.Pid, proxied, c.duration)

	r := newReport()
	dctx, cancel := context.WithTimeout(ctx, c.duration)
	defer cancel()
	var wg sync.WaitGroup
	spawn := func(n int, subnet int, f func(ctx context.Context, cl *http.Client, i int)) {
		for i := range n {
			wg.Add(1)
			// Each client lives until the soak's end.
			go func() {
				defer wg.Done()
				f(dctx, client(fmt.Sprintf("127.0.%d.%d", subnet, 1+i%250), subnet != 2), i)
			}()
		}
	}
	cpu0 := srv.cpuSeconds()
	start := time.Now()
	spawn(c.participants, 1, func(ctx context.Context, cl *http.Client, i int) { participant(ctx, cl, srv.base, r, "own address") })
	// A room behind one NAT: one address, each participant with the code.
	spawn(c.natted, 6, func(ctx context.Context, _ *http.Client, i int) {
		participant(ctx, client("127.0.6.1", true), srv.base, r, "behind one address")
	})
	spawn(1, 7, func(ctx context.Context, cl *http.Client, i int) {
		cl.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: proxy.Pool}
		participant(ctx, cl, proxied, r, "through the proxy")
	})
	spawn(c.scripts, 2, func(ctx context.Context, cl *http.Client, i int) { script(ctx, cl, srv.base, r) })
	spawn(1, 3, func(ctx context.Context, cl *http.Client, i int) { hostile(ctx, cl, srv.base, r) })
	spawn(c.viewers, 4, func(ctx context.Context, cl *http.Client, i int) { viewer(ctx, cl, srv.base, r) })
	spawn(1, 5, func(ctx context.Context, cl *http.Client, i int) { presenter(ctx, cl, srv.base, r) })
	// Issue 53's attackers, from the room's own address.
	spawn(c.slowReaders, 6, func(ctx context.Context, _ *http.Client, i int) { slowExporter(ctx, srv.base, r) })
	spawn(1, 6, func(ctx context.Context, _ *http.Client, i int) { importBomber(ctx, srv.base, r) })
	spawn(1, 6, func(ctx context.Context, _ *http.Client, i int) { neighbour(ctx, srv.base, r) })
	spawn(1, 6, func(ctx context.Context, _ *http.Client, i int) { identityFlood(ctx, srv.base, r) })
	// The sampler of the server's memory lives until the soak's end.
	wg.Add(1)
	go func() {
		defer wg.Done()
		every(dctx, time.Second, func() { r.rss(srv.rssBytes()) })
	}()
	every(dctx, time.Minute, func() { log.Printf("%s: %s", time.Since(start).Round(time.Second), r.line()) })
	wg.Wait()
	elapsed := time.Since(start)
	cpu := srv.cpuSeconds() - cpu0
	r.served(srv.base)
	if err := srv.stop(); err != nil {
		log.Printf("server: %v", err)
	}
	containers, volumes := leftovers()
	text := r.markdown(c, elapsed, cpu, containers, volumes)
	fmt.Println(text)
	if c.out != "" {
		if err := benchdoc.Replace(c.out, beginMark, endMark, "## A room for an hour (`make soak SOAK=60m`)", text); err != nil {
			return err
		}
	}
	if containers != 0 || volumes != 0 {
		return fmt.Errorf("%d containers and %d volumes left behind", containers, volumes)
	}
	if r.maxRSS > c.rssBound {
		return fmt.Errorf("the server's RSS reached %d MiB, past the %d MiB bound", r.maxRSS>>20, c.rssBound>>20)
	}
	return nil
}

// client is an HTTP client whose connections come from addr; jar keeps
// cookies as a browser does.
func client(addr string, jar bool) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(addr)}, Timeout: 10 * time.Second}
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 4}}
	if jar {
		c.Jar, _ = cookiejar.New(nil)
	}
	return c
}

// server is the binary under test.
type server struct {
	cmd  *exec.Cmd
	base string
	dir  string
	done chan error
	once sync.Once
	err  error
}

// freePort is a loopback port nobody listens on now.
func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func startServer(ctx context.Context, bin string) (*server, error) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort())
	dir, err := os.MkdirTemp("", "limitlab-soak")
	if err != nil {
		return nil, err
	}
	s := &server{base: "http://" + addr, dir: dir, done: make(chan error, 1)}
	// A room as docs/workshops.md runs it: a join code, the proxy in
	// front trusted, the participants' quota of one run each.
	s.cmd = exec.Command(bin, "-addr", addr, "-data", filepath.Join(dir, "data"), "-trusted-proxies", "127.0.0.1")
	s.cmd.Env = append(os.Environ(), "LIMITLAB_PRESENTER_TOKEN="+presenterToken, "LIMITLAB_JOIN_CODE="+joinCode)
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, err
	}
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { s.done <- s.cmd.Wait() }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		res, err := http.Get(s.base + "/api/host")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			s.stop()
			return nil, fmt.Errorf("the server did not answer (its log: %s)", logf.Name())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stop asks the server to stop, as a facilitator would, and waits.
func (s *server) stop() error {
	s.once.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case s.err = <-s.done:
		case <-time.After(time.Minute):
			_ = s.cmd.Process.Kill()
			s.err = fmt.Errorf("did not stop within a minute of SIGTERM")
		}
	})
	return s.err
}

func (s *server) cpuSeconds() float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (u + st) / 100
}

func (s *server) rssBytes() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// leftovers counts the containers and volumes labelled as Limit Lab's.
func leftovers() (containers, volumes int) {
	count := func(args ...string) int {
		out, err := exec.Command("docker", args...).Output()
		if err != nil {
			return -1
		}
		return len(strings.Fields(string(out)))
	}
	return count("ps", "-aq", "--filter", "label=io.limitlab.run"), count("volume", "ls", "-q", "--filter", "label=io.limitlab.run")
}

func jitter(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d/2 + rand.N(d))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
