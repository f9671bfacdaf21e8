// Command overhead measures what Limit Lab costs the host it measures,
// against what `docker stats` costs for the same containers (issue 16): in
// each round, three windows of the same length, CPU ticks (1/100 s) of the
// engine's processes and of the tool, read from /proc/<pid>/stat:
//
//  1. twelve spin containers at --cpus 0.02, alone;
//  2. the same with `docker stats` streaming them (1 Hz);
//  3. Limit Lab running the same twelve as one run, sampling at 4 Hz (its
//     default);
//  4. the same at 1 Hz, `docker stats`' own rate;
//
// and, after the third, a burst of Prometheus scrapes of /metrics
// (scrape.go);
//
// and, beside the containers alone, the floor of a sample's cost on this
// host (floor.go).
//
// It writes each round's ticks and the ratio of what the two tools add
// into docs/benchmarks.md. Run it with `make bench-overhead`.
//
// The binary is also its own workload program, as the server is.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/limitlab/limitlab/internal/benchdoc"
	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/workload"
	"github.com/moby/moby/client"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "workload" {
		os.Exit(workload.Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "floor" {
		if err := floorMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "overhead:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "overhead:", err)
		os.Exit(1)
	}
}

// ticks is one window's CPU ticks by process group.
type ticks struct{ dockerd, containerd, shims, tool int64 }

func (t ticks) engine() int64 { return t.dockerd + t.containerd + t.shims }
func (t ticks) total() int64  { return t.engine() + t.tool }

type round struct {
	alone, stats, lab, lab1 ticks
	floor                   floorResult
	scrape                  scrapeCost // /metrics scraped while Limit Lab samples at 4 Hz
}

// added is what a tool adds over the containers alone: its own ticks and
// the engine's extra.
func (r round) added(t ticks) int64 { return t.total() - r.alone.total() }

func run(ctx context.Context) error {
	bin := flag.String("bin", "bin/limitlab", "the server binary (make build)")
	rounds := flag.Int("rounds", 3, "rounds of the three windows")
	window := flag.Duration("window", 20*time.Second, "length of each window")
	lanes := flag.Int("lanes", 12, "containers")
	out := flag.String("out", "docs/benchmarks.md", "markdown file whose overhead section is replaced")
	flag.Parse()
	if _, err := exec.LookPath("docker"); err != nil {
		return errors.New("needs the docker CLI for its `docker stats`")
	}
	eng, err := engine.NewClient()
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "overhead: building the workload image")
	image, err := engine.EnsureImage(ctx, eng, self, log)
	if err != nil {
		return err
	}
	var results []round
	for k := range *rounds {
		fmt.Fprintf(os.Stderr, "overhead: round %d of %d\n", k+1, *rounds)
		var r round
		if r.alone, r.stats, r.floor, err = containerWindows(ctx, eng, image, *lanes, *window, log); err != nil {
			return err
		}
		if r.lab, r.scrape, err = labWindow(ctx, *bin, *lanes, *window, 250*time.Millisecond, true); err != nil {
			return err
		}
		if r.lab1, _, err = labWindow(ctx, *bin, *lanes, *window, time.Second, false); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "overhead: alone %+v, docker stats %+v, Limit Lab %+v, at 1 Hz %+v, the floor %+v\n", r.alone, r.stats, r.lab, r.lab1, r.floor)
		results = append(results, r)
	}
	return benchdoc.Replace(*out, "<!-- overhead:begin -->", "<!-- overhead:end -->",
		"## Limit Lab's own cost to the host (`make bench-overhead`)", report(results, *lanes, *window))
}

// containerWindows starts the containers, measures them alone, takes the
// floor's reading of them, measures them with `docker stats` streaming,
// and removes them.
func containerWindows(ctx context.Context, eng *client.Client, image string, n int, window time.Duration, log *slog.Logger) (alone, stats ticks, floor floorResult, err error) {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	runID := "overhead-" + hex.EncodeToString(b)
	lane := specs.PlannedLane{Target: -1, Workload: specs.Workload{Kind: specs.KindSpin, Threads: 1, Seconds: 5 * window.Seconds()},
		Resources: specs.Resources{NanoCPUs: 2e7}}
	var ids []string
	var pids []int
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		engine.RemoveRun(rctx, eng, runID, ids, nil, log)
	}()
	for i := range n {
		// As Limit Lab makes them where it reads progress files: silent
		// on the engine's log, so the windows differ only by the tool.
		c, err := engine.CreateLane(ctx, eng, "", runID, i, lane, image, "", engine.WithProgressFile(true))
		if c.ID != "" {
			ids = append(ids, c.ID)
		}
		if err != nil {
			return alone, stats, floor, err
		}
		if _, err := eng.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
			return alone, stats, floor, err
		}
		ins, err := eng.ContainerInspect(ctx, c.ID, client.ContainerInspectOptions{})
		if err != nil || ins.Container.State == nil || ins.Container.State.Pid <= 0 {
			return alone, stats, floor, errors.Join(fmt.Errorf("container %.12s has no pid", c.ID), err)
		}
		pids = append(pids, ins.Container.State.Pid)
	}
	settle(ctx)
	alone = measure(ctx, window, 0)
	if floor, err = floorWindow(ctx, ids, pids, window, 250*time.Millisecond); err != nil {
		return alone, stats, floor, err
	}
	settle(ctx)
	cmd := exec.CommandContext(ctx, "docker", append([]string{"stats", "--format", "{{.ID}} {{.CPUPerc}} {{.MemUsage}}"}, ids...)...)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		return alone, stats, floor, err
	}
	settle(ctx)
	stats = measure(ctx, window, cmd.Process.Pid)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return alone, stats, floor, ctx.Err()
}

// labWindow starts the server, runs the same containers as one run of its
// own sampled every interval, measures, and stops it.
func labWindow(ctx context.Context, bin string, n int, window, interval time.Duration, scrape bool) (ticks, scrapeCost, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return ticks{}, scrapeCost{}, err
	}
	addr := l.Addr().String()
	l.Close()
	data, err := os.MkdirTemp("", "limitlab-overhead")
	if err != nil {
		return ticks{}, scrapeCost{}, err
	}
	defer os.RemoveAll(data)
	srv := exec.Command(bin, "-addr", addr, "-data", data)
	var logs bytes.Buffer
	srv.Stdout, srv.Stderr = &logs, &logs
	if err := srv.Start(); err != nil {
		return ticks{}, scrapeCost{}, err
	}
	defer func() {
		_ = srv.Process.Signal(syscall.SIGTERM)
		_ = srv.Wait()
	}()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	base := "http://" + addr
	if err := waitFor(ctx, time.Minute, func() bool {
		res, err := hc.Get(base + "/api/host")
		if err == nil {
			res.Body.Close()
		}
		return err == nil && res.StatusCode == http.StatusOK
	}); err != nil {
		return ticks{}, scrapeCost{}, fmt.Errorf("the server did not answer: %v\n%s", err, logs.String())
	}
	var spec strings.Builder
	fmt.Fprintf(&spec, `{"name": "overhead", "mode": "parallel", "duration": "%ds", "interval": "%s", "lanes": [`, int(3*window.Seconds()), interval)
	for i := range n {
		if i > 0 {
			spec.WriteString(",")
		}
		fmt.Fprintf(&spec, `{"name": "spin %d", "workload": {"kind": "spin", "seconds": %d}, "limits": {"cpus": "0.02"}}`, i+1, int(2*window.Seconds()))
	}
	spec.WriteString("]}")
	res, err := hc.Post(base+"/api/runs", "application/json", strings.NewReader(spec.String()))
	if err != nil {
		return ticks{}, scrapeCost{}, err
	}
	var created struct {
		ID     string
		Errors []struct{ Field, Message string }
	}
	_ = json.NewDecoder(res.Body).Decode(&created)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		return ticks{}, scrapeCost{}, fmt.Errorf("the run was refused: %d %+v", res.StatusCode, created.Errors)
	}
	defer func() {
		if res, err := hc.Post(base+"/api/runs/"+created.ID+"/stop", "application/json", nil); err == nil {
			res.Body.Close()
		}
	}()
	if err := waitFor(ctx, 2*time.Minute, func() bool {
		var v struct{ Lanes []struct{ State string } }
		res, err := hc.Get(base + "/api/runs/" + created.ID)
		if err != nil {
			return false
		}
		defer res.Body.Close()
		_ = json.NewDecoder(res.Body).Decode(&v)
		running := 0
		for _, l := range v.Lanes {
			if l.State == "running" {
				running++
			}
		}
		return running == n
	}); err != nil {
		return ticks{}, scrapeCost{}, fmt.Errorf("the run's lanes did not all start: %v", err)
	}
	settle(ctx)
	t := measure(ctx, window, srv.Process.Pid)
	var sc scrapeCost
	if scrape && ctx.Err() == nil {
		var err error
		if sc, err = scrapeBurst(ctx, base, srv.Process.Pid, float64(t.tool)/window.Seconds()); err != nil {
			return t, sc, err
		}
	}
	return t, sc, ctx.Err()
}

func settle(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(3 * time.Second):
	}
}

func waitFor(ctx context.Context, within time.Duration, cond func() bool) error {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// measure counts the ticks of the engine's processes, and of tool (a pid,
// or 0), over one window.
func measure(ctx context.Context, window time.Duration, tool int) ticks {
	before := snapshot(tool)
	select {
	case <-ctx.Done():
	case <-time.After(window):
	}
	after := snapshot(tool)
	var t ticks
	for pid, p := range after {
		d := p.ticks - before[pid].ticks // a process started meanwhile counts whole
		switch {
		case pid == tool:
			t.tool += d
		case p.comm == "dockerd":
			t.dockerd += d
		case p.comm == "containerd":
			t.containerd += d
		case strings.HasPrefix(p.comm, "containerd-shim"):
			t.shims += d
		}
	}
	return t
}

type proc struct {
	comm  string
	ticks int64
}

// snapshot reads the user and system ticks of the engine's processes and
// of tool from /proc/<pid>/stat.
func snapshot(tool int) map[int]proc {
	out := map[int]proc{}
	engine.Processes(func(pid int, comm string, ns uint64) {
		if pid == tool || comm == "dockerd" || comm == "containerd" || strings.HasPrefix(comm, "containerd-shim") {
			out[pid] = proc{comm: comm, ticks: int64(ns / (1e9 / 100))}
		}
	})
	return out
}

func report(rs []round, n int, window time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured by `make bench-overhead` on %s: %d spin containers at --cpus 0.02 keeping their progress in files, as Limit Lab makes them on this host (nothing on the engine's log), windows of %s, CPU ticks (1/100 s of one CPU) from `/proc/<pid>/stat`. \"Added\" is everything in the window (the engine's processes and the tool) less the containers alone in the same round.\n\n",
		time.Now().UTC().Format("2006-01-02"), n, window)
	b.WriteString("| round | window | dockerd | containerd | shims | the tool | added over the containers alone |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	pct := func(t int64) string {
		return strconv.FormatFloat(100*float64(t)/100/window.Seconds(), 'f', 1, 64) + "% of a core"
	}
	for k, r := range rs {
		fmt.Fprintf(&b, "| %d | containers alone | %d | %d | %d | – | – |\n", k+1, r.alone.dockerd, r.alone.containerd, r.alone.shims)
		fmt.Fprintf(&b, "| %d | plus `docker stats` (1 Hz) | %d | %d | %d | CLI %d | %d ticks: %s |\n", k+1, r.stats.dockerd, r.stats.containerd, r.stats.shims, r.stats.tool, r.added(r.stats), pct(r.added(r.stats)))
		fmt.Fprintf(&b, "| %d | Limit Lab running them (4 Hz) | %d | %d | %d | server %d | %d ticks: %s |\n", k+1, r.lab.dockerd, r.lab.containerd, r.lab.shims, r.lab.tool, r.added(r.lab), pct(r.added(r.lab)))
		fmt.Fprintf(&b, "| %d | Limit Lab at 1 Hz | %d | %d | %d | server %d | %d ticks: %s |\n", k+1, r.lab1.dockerd, r.lab1.containerd, r.lab1.shims, r.lab1.tool, r.added(r.lab1), pct(r.added(r.lab1)))
	}
	b.WriteString("\n| round | Limit Lab adds ÷ `docker stats` adds: at 4 Hz | at 1 Hz | the engine's extra while Limit Lab samples (4 Hz) | the server's CPU per container-sample: 4 Hz | 1 Hz | the floor: the per-tick files alone, 4 Hz |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	for k, r := range rs {
		ratio := func(t ticks) string {
			if a := r.added(r.stats); a > 0 {
				return strconv.FormatFloat(float64(r.added(t))/float64(a), 'f', 2, 64)
			}
			return "—"
		}
		// Everything the server did in the window (read, parse, publish,
		// store, the HTTP it answered), over the samples it took: n lanes
		// at the window's rate.
		perSample := func(t ticks, hz float64) float64 {
			return float64(t.tool) * 10e3 / (float64(n) * hz * window.Seconds())
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %d ticks | %.0f µs | %.0f µs | %.0f µs (%d files a tick) |\n", k+1, ratio(r.lab), ratio(r.lab1), r.lab.engine()-r.alone.engine(), perSample(r.lab, 4), perSample(r.lab1, 1), r.floor.perSample(), r.floor.Files)
	}
	fmt.Fprintf(&b, "\nA Prometheus scrape of `/metrics` while the twelve lanes run at 4 Hz: %d scrapes in a row, the server's ticks over what it spent sampling at the window's rate meanwhile, and one scrape every %s as a share of the server's own CPU over those %s.\n\n", scrapes, scrapeEvery, scrapeEvery)
	b.WriteString("| round | lines a scrape | the burst | the server's CPU per scrape | one every 15 s ÷ the server's own CPU |\n| --- | --- | --- | --- | --- |\n")
	for k, r := range rs {
		fmt.Fprintf(&b, "| %d | %d | %d ticks in %s | %.2f ms | %.3f |\n", k+1, r.scrape.series, r.scrape.ticks, r.scrape.took.Round(time.Millisecond), r.scrape.perScrape(), r.scrape.shareAt15s())
	}
	return b.String()
}
