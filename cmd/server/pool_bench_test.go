package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/testbed"
)

// procCPU is a process's CPU time so far, all its threads, from
// /proc/<pid>/stat (utime and stime, in clock ticks of 10 ms).
func procCPU(b testing.TB, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command, which is in parentheses.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// procMemory is a process's resident set and its peak, in MiB.
func procMemory(b testing.TB, pid int) (rss, peak float64) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb / 1024
		case "VmHWM:":
			peak = kb / 1024
		}
	}
	return rss, peak
}

// BenchmarkPoolDashboard measures the dashboard's own cost on a pool: the
// real server binary on three engines of the test's own, each running a
// run of 12 lanes (spin at --cpus 0.02) sampled at 4 Hz from their cgroup
// files, first with no viewer, then watched by 200 websocket viewers
// spread over the three runs. Phases alternate, three rounds, so that the
// host's drift falls on both; it reports the server's CPU in each (its
// /proc times: its threads only, not the viewers', which run in this
// process) and its resident memory. One iteration is the whole
// measurement: run it with -benchtime 1x.
func BenchmarkPoolDashboard(b *testing.B) {
	const (
		engines = 3
		lanes   = 12
		viewers = 200
		phase   = 15 * time.Second
		rounds  = 3
	)
	bin, err := enginetest.BuildBinary(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	ds := make([]*testbed.Dockerd, engines)
	var wg sync.WaitGroup
	for i, n := range []string{"da", "db", "dc"} {
		wg.Add(1)
		go func() { defer wg.Done(); ds[i] = enginetest.StartDockerd(b, n, testbed.DockerdOptions{}) }()
	}
	wg.Wait()
	var entries []string
	for i, d := range ds {
		if d == nil {
			b.FailNow()
		}
		entries = append(entries, fmt.Sprintf(`{"name": "%s", "host": "%s"}`, []string{"da", "db", "dc"}[i], d.Host))
	}
	file := filepath.Join(b.TempDir(), "engines.json")
	if err := os.WriteFile(file, []byte(`{"engines": [`+strings.Join(entries, ",")+`]}`), 0o600); err != nil {
		b.Fatal(err)
	}
	for range b.N {
		cmd, exited, base := startServer(b, bin, b.TempDir(), "-engines", file, "-participant-runs", "0", "-address-runs", "-1")
		pid := cmd.Process.Pid
		var ls []string
		for i := range lanes {
			ls = append(ls, fmt.Sprintf(`{"name": "lane %d", "workload": {"kind": "spin", "seconds": 150}, "limits": {"cpus": "0.02"}}`, i))
		}
		spec := `{"name": "dashboard cost", "duration": "3m", "lanes": [` + strings.Join(ls, ",") + `]}`
		var ids []string
		for range engines {
			ids = append(ids, submit(b, base, spec))
		}
		enginetest.WaitFor(b, 3*time.Minute, "every lane of the three runs to run", func() bool {
			for _, id := range ids {
				var v struct {
					Engine string
					Lanes  []struct{ State string }
				}
				getJSON(b, base+"/api/runs/"+id, &v)
				if v.Engine == "" || len(v.Lanes) != lanes {
					return false
				}
				for _, l := range v.Lanes {
					if l.State != "running" {
						return false
					}
				}
			}
			return true
		})
		time.Sleep(2 * time.Second) // every lane's first samples taken

		cpuOver := func() float64 {
			c := procCPU(b, pid)
			time.Sleep(phase)
			return (procCPU(b, pid) - c).Seconds() / phase.Seconds()
		}
		var alone, watched []float64
		var received atomic.Int64
		var rss, peak float64
		for round := range rounds {
			alone = append(alone, cpuOver())
			ctx, cancel := context.WithCancel(context.Background())
			readers := watch(ctx, b, base, ids, viewers, &received)
			time.Sleep(3 * time.Second) // histories sent
			before := received.Load()
			watched = append(watched, cpuOver())
			got := received.Load() - before
			rss, peak = procMemory(b, pid)
			cancel()
			readers.Wait()
			b.Logf("round %d: server %.3f cores alone, %.3f cores with %d viewers (%.1f messages each a second); RSS %.0f MiB, peak %.0f MiB",
				round+1, alone[round], watched[round], viewers, float64(got)/viewers/phase.Seconds(), rss, peak)
			time.Sleep(2 * time.Second) // the streams closed
		}
		slices.Sort(alone)
		slices.Sort(watched)
		b.ReportMetric(alone[len(alone)/2], "cores-alone")
		b.ReportMetric(watched[len(watched)/2], "cores-200-viewers")
		b.ReportMetric(rss, "rss-MiB")
		b.ReportMetric(peak, "rss-peak-MiB")
		_ = terminate(b, cmd, exited)
	}
}

// watch opens n viewers' live streams of the runs, in turn, each read
// until ctx ends and counted in received; the group waits for them.
func watch(ctx context.Context, b *testing.B, base string, ids []string, n int, received *atomic.Int64) *sync.WaitGroup {
	var readers sync.WaitGroup
	for i := range n {
		url := "ws" + strings.TrimPrefix(base, "http") + "/api/runs/" + ids[i%len(ids)] + "/live"
		c, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			b.Fatal(err)
		}
		c.SetReadLimit(4 << 20)
		readers.Add(1)
		// Lives until ctx ends.
		go func() {
			defer readers.Done()
			defer c.CloseNow()
			for {
				if _, _, err := c.Read(ctx); err != nil {
					return
				}
				received.Add(1)
			}
		}()
	}
	return &readers
}
