package runner_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workshop"
	"github.com/moby/moby/client"
)

// TestServiceUnderLoad runs an http service at half a CPU under a load
// generator on the run's private network, beside an idle unlimited service.
//
// The idle service sets no memory limit: it gets the server's default
// (-default-memory), read back from the engine and shown in its docker run
// command.
func TestServiceUnderLoad(t *testing.T) {
	m := enginetest.Manager(t, func(o *workshop.Options) { o.DefaultMemory = 256 << 20 })
	eng, _, _ := realEngine(t)
	r := startSpec(t, m, `{"name": "service", "mode": "parallel", "duration": "60s", "lanes": [
	  {"name": "svc",  "workload": {"kind": "http", "work_us": 2000}, "limits": {"cpus": "0.5"}},
	  {"name": "ab",   "workload": {"kind": "load", "target": "svc", "requests": 400, "concurrency": 8}},
	  {"name": "idle", "workload": {"kind": "http", "seconds": 3}}]}`)
	waitFor(t, 30*time.Second, "the service running", func() bool { return r.View().Lanes[0].State == runner.LaneRunning })

	// The service has loopback only; the load generator shares its network
	// namespace. Nothing has an address that anything outside could reach,
	// and nothing is published.
	ctx := context.Background()
	svcIns, err := eng.ContainerInspect(ctx, "limitlab-"+r.ID()+"-0", client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mode := svcIns.Container.HostConfig.NetworkMode; mode != "none" || len(svcIns.Container.HostConfig.PortBindings) != 0 {
		t.Errorf("service network mode %q, port bindings %v", mode, svcIns.Container.HostConfig.PortBindings)
	}
	for name, ep := range svcIns.Container.NetworkSettings.Networks {
		if ip := ep.IPAddress; ip.IsValid() {
			t.Errorf("service has address %s on network %s", ip, name)
		}
	}
	// A request from the host to the service's port fails: nothing is
	// published. (Only loopback is tried: the service has no other address.)
	hc := http.Client{Timeout: time.Second}
	if res, err := hc.Get("http://127.0.0.1:8080/"); err == nil {
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if string(body) == "ok\n" {
			t.Error("the host reached the service on 127.0.0.1:8080")
		}
	}
	idleIns, err := eng.ContainerInspect(ctx, "limitlab-"+r.ID()+"-2", client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mem := idleIns.Container.HostConfig.Memory; mem != 256<<20 {
		t.Errorf("the http lane without a memory limit has --memory %d on the engine, want the default 256m", mem)
	}
	if run := r.View().Lanes[2].DockerRun; !strings.Contains(run, "--memory 256m") {
		t.Errorf("its docker run command does not show the default: %s", run)
	}
	abIns, err := eng.ContainerInspect(ctx, "limitlab-"+r.ID()+"-1", client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mode := string(abIns.Container.HostConfig.NetworkMode); mode != "container:"+svcIns.Container.ID {
		t.Errorf("load generator network mode %q, want the service's namespace", mode)
	}

	v := waitDone(t, r, 2*time.Minute)
	if v.State != runner.StateDone {
		t.Fatalf("state %s: %s (%+v)", v.State, v.Error, v.Lanes)
	}
	svc, ab := v.Lanes[0], v.Lanes[1]
	if ab.Requests != 400 || ab.Failures != 0 || ab.RPS <= 0 || ab.LatencyMs == nil {
		t.Errorf("load totals: requests %d failures %d rps %g latency %+v", ab.Requests, ab.Failures, ab.RPS, ab.LatencyMs)
	}
	if l := ab.LatencyMs; l != nil && !(l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.Max) {
		t.Errorf("percentiles out of order: %+v", l)
	}
	if svc.ExitCode == nil || *svc.ExitCode != 0 || svc.TimedOut {
		t.Errorf("service ended with %v (timed out %v): it should stop cleanly when its load ends", svc.ExitCode, svc.TimedOut)
	}
	if svc.ThrottledPeriods == 0 {
		t.Error("the half-CPU service under load was never throttled")
	}
	var svcThrottled, idleThrottled uint64
	latencySamples := 0
	for _, s := range samplesOf(t, r) {
		switch s.Lane {
		case 0:
			svcThrottled += s.ThrottledPeriods
		case 1:
			if s.LatencyMs != nil && s.LatencyMs.P99 > 0 {
				latencySamples++
			}
		case 2:
			idleThrottled += s.ThrottledPeriods
		}
	}
	if svcThrottled == 0 || idleThrottled != 0 {
		t.Errorf("throttled periods in samples: service %d (want > 0), idle %d (want 0)", svcThrottled, idleThrottled)
	}
	if latencySamples == 0 {
		t.Error("no sample of the load lane carries an interval's latency")
	}
	if n := labelled(t, r.ID()); n != 0 {
		t.Errorf("%d containers remain", n)
	}
}

// TestGOMAXPROCSLab runs the lab as defined: each arm's service serves its
// load to the end, and the load table has every arm's totals and latency
// percentiles.
func TestGOMAXPROCSLab(t *testing.T) {
	enginetest.Measure(t, "the gomaxprocs lab", gomaxprocsLab)
}

func gomaxprocsLab(t testing.TB) {
	m := newTestManager(t)
	r := startSpec(t, m, `{"lab": "gomaxprocs"}`)
	v := waitDone(t, r, 3*time.Minute)
	if v.State != runner.StateDone {
		t.Fatalf("state %s: %s", v.State, v.Error)
	}
	enginetest.CheckVerdict(t, v.Verdict)
	if v.Verdict != nil {
		t.Logf("verdict: %s", v.Verdict.Explanation)
		if v.Verdict.Judged {
			enginetest.Figure(t, "gomaxprocs (share of CPU time throttled)", "%s (predicted %s)", enginetest.Ratios(v.Verdict.Measured), enginetest.Ratios(v.Verdict.Predicted))
		}
	}
	checkSteps(t, v)
	arms := map[string]string{"svc host": "GOMAXPROCS=" + strconv.Itoa(m.Pool().Host().NCPU), "svc 1": "GOMAXPROCS=1"}
	for _, l := range v.Lanes {
		switch l.Workload.Kind {
		case "http":
			if l.Periods > 0 {
				enginetest.Figure(t, "gomaxprocs, "+l.Name+" (periods throttled)", "%.0f%% (%s)", 100*float64(l.ThrottledPeriods)/float64(l.Periods), l.Result)
			}
			if l.ExitCode == nil || *l.ExitCode != 0 || l.Periods == 0 {
				var n int
				var sampled uint64
				for _, s := range samplesOf(t, r) {
					if s.Lane == l.Index {
						n, sampled = n+1, sampled+s.Periods
					}
				}
				code := "none"
				if l.ExitCode != nil {
					code = strconv.Itoa(*l.ExitCode)
				}
				t.Errorf("%s: exit %s, %d periods in its totals, %d in its %d samples (stats from %s)", l.Name, code, l.Periods, sampled, n, l.StatsSource)
			}
			if want, ok := arms[l.Name]; ok && !strings.Contains(l.Result, want) {
				t.Errorf("%s: %q, want %s", l.Name, l.Result, want)
			}
		case "load":
			if l.LatencyMs != nil {
				enginetest.Figure(t, "gomaxprocs, "+l.Name+" (requests/s, p99 ms)", "%.0f, %.1f", l.RPS, l.LatencyMs.P99)
			}
			if l.Requests != 1024 || l.Failures > l.Requests || l.RPS <= 0 || l.LatencyMs == nil || l.LatencyMs.P99 <= 0 {
				t.Errorf("%s: requests %d failures %d rps %g latency %+v", l.Name, l.Requests, l.Failures, l.RPS, l.LatencyMs)
			}
		}
	}
}

// The CFS burst lab to its verdict: the same bursty load on a service
// under --cpus 0.5, without and with a 50 ms burst that the server writes
// into the second service's cgroup itself and reads back.
func TestCFSBurstLab(t *testing.T) {
	enginetest.Measure(t, "the CFS burst lab", func(t testing.TB) {
		m := newTestManager(t)
		r := startSpec(t, m, `{"lab": "cfs-burst"}`)
		v := waitDone(t, r, 3*time.Minute)
		if v.State != runner.StateDone {
			t.Fatalf("state %s: %s", v.State, v.Error)
		}
		enginetest.CheckVerdict(t, v.Verdict)
		if v.Verdict != nil && v.Verdict.Judged {
			t.Logf("verdict: %s", v.Verdict.Explanation)
			enginetest.Figure(t, "cfs-burst (throttled per burst, p99 ms; without, then with a burst)", "%s (predicted %s)", enginetest.Ratios(v.Verdict.Measured), enginetest.Ratios(v.Verdict.Predicted))
		}
		burst := v.Lanes[2]
		if burst.Kernel == nil {
			t.Fatalf("%s: no kernel view", burst.Name)
		}
		var found bool
		for _, f := range burst.Kernel.Files {
			if f.Flag == "cpu_burst" {
				found = true
				if !f.Present || !f.Holds || f.Got != "50000" {
					t.Errorf("%s: %s holds %q (present %v), want 50000", burst.Name, f.File, f.Got, f.Present)
				}
			}
		}
		if !found {
			t.Errorf("%s: the kernel view has no cpu_burst row: %+v", burst.Name, burst.Kernel.Files)
		}
		if !strings.Contains(burst.DockerRun, "moby/moby#44204") {
			t.Errorf("%s: its docker run does not say the burst is not Docker's: %s", burst.Name, burst.DockerRun)
		}
	})
}
