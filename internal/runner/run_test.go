package runner_test

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workshop"
	"github.com/moby/moby/client"
)

func newTestManager(t testing.TB) *workshop.Manager { return enginetest.Manager(t) }

func realEngine(t testing.TB) (*client.Client, string, engine.HostInfo) { return enginetest.Engine(t) }

func labelled(t testing.TB, runID string) int { return enginetest.Labelled(t, runID) }

func waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	enginetest.WaitFor(t, within, what, cond)
}

// startSpec validates a JSON spec and starts it.
func startSpec(t testing.TB, m *workshop.Manager, specJSON string) *runner.Run {
	t.Helper()
	spec, p := enginetest.Plan(t, m, specJSON)
	r, err := m.SubmitFrom(spec, p, "", "")
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return r
}

func waitDone(t testing.TB, r *runner.Run, within time.Duration) runner.RunView {
	return enginetest.WaitDone(t, r, within)
}

func TestSequentialCPUsLadder(t *testing.T) {
	m := newTestManager(t)
	r := startSpec(t, m, `{"name": "cpus ladder", "mode": "sequential", "duration": "60s",
	  "lanes": [{"name": "cpus=1",  "workload": {"kind": "md5", "mb": 500}, "limits": {"cpus": "1"}},
	            {"name": "cpus=.5", "workload": {"kind": "md5", "mb": 500}, "limits": {"cpus": "0.5"}}]}`)

	// While a lane runs its container is labelled with the run.
	waitFor(t, 30*time.Second, "a running lane", func() bool { return r.View().Lanes[0].State != runner.LanePending })
	v := waitDone(t, r, 2*time.Minute)
	if v.State != runner.StateDone {
		t.Fatalf("state = %s (%s), want done", v.State, v.Error)
	}
	for i, want := range []int64{1e9, 5e8} {
		l := v.Lanes[i]
		if l.Applied == nil || l.Applied.NanoCPUs != want {
			t.Errorf("lane %d: applied NanoCPUs = %+v, want %d (read back from inspect)", i, l.Applied, want)
		}
		if l.ExitCode == nil || *l.ExitCode != 0 {
			t.Errorf("lane %d: exit code %v, want 0 (%s)", i, l.ExitCode, l.Error)
		}
		if l.WallSeconds <= 0 || l.Throughput <= 0 || l.UserSeconds+l.SysSeconds <= 0 {
			t.Errorf("lane %d: wall %g, throughput %g, cpu %g+%g: want all positive", i, l.WallSeconds, l.Throughput, l.UserSeconds, l.SysSeconds)
		}
	}
	if !strings.Contains(v.Lanes[1].DockerRun, "--cpus 0.5") {
		t.Errorf("docker_run %q lacks --cpus 0.5", v.Lanes[1].DockerRun)
	}
	ratio := v.Lanes[1].WallSeconds / v.Lanes[0].WallSeconds
	t.Logf("wall: cpus=1 %.2fs, cpus=0.5 %.2fs, ratio %.2f", v.Lanes[0].WallSeconds, v.Lanes[1].WallSeconds, ratio)
	if math.Abs(ratio-2) > 0.4 {
		t.Errorf("wall-time ratio = %.2f, want 2.0 within 20%%", ratio)
	}
	if math.Abs(v.Lanes[1].Ratio-ratio) > 1e-9 {
		t.Errorf("lane ratio = %g, want %g", v.Lanes[1].Ratio, ratio)
	}
	if v.Lanes[1].ThrottledPeriods == 0 {
		t.Errorf("cpus=0.5 lane was never throttled: %+v", v.Lanes[1])
	}
	if n := labelled(t, r.ID()); n != 0 {
		t.Errorf("%d containers of the run remain", n)
	}

	// The history holds sample batches with CPU near each lane's limit.
	cpu := map[int][]float64{}
	for _, s := range samplesOf(t, r) {
		cpu[s.Lane] = append(cpu[s.Lane], s.CPU)
	}
	if m0, m1 := median(cpu[0]), median(cpu[1]); math.Abs(m0-1) > 0.2 || math.Abs(m1-0.5) > 0.1 {
		t.Errorf("median CPU per lane = %.2f and %.2f cores: want about 1 and 0.5 (samples %v)", m0, m1, cpu)
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func TestMemoryLimitOOMKill(t *testing.T) {
	m := newTestManager(t)
	r := startSpec(t, m, `{"name": "oom", "duration": "60s",
	  "lanes": [{"name": "64m", "workload": {"kind": "mem", "mb": 200, "seconds": 5}, "limits": {"memory": "64m"}}]}`)
	v := waitDone(t, r, time.Minute)
	l := v.Lanes[0]
	if !l.OOMKilled {
		t.Fatalf("oom_killed = false, want true: %+v", l)
	}
	if l.Applied == nil || l.Applied.Memory != 64<<20 {
		t.Errorf("applied memory = %+v, want 64 MiB", l.Applied)
	}
	if l.ExitCode == nil || *l.ExitCode != 137 {
		t.Errorf("exit code = %v, want 137 (SIGKILL)", l.ExitCode)
	}
	// The engine's events mark the kill on the lane as it happens.
	var oom, die *runner.EventRecord
	for i, e := range v.Events {
		switch e.Kind {
		case "oom":
			oom = &v.Events[i]
		case "die":
			die = &v.Events[i]
		}
	}
	if oom == nil || die == nil || die.ExitCode == nil || *die.ExitCode != 137 {
		t.Fatalf("events %+v: want oom, and die with exit code 137", v.Events)
	}
	if d := l.EndedAt - oom.AtSeconds; d < -0.5 || d > 2 {
		t.Errorf("oom marked at %.2fs, the lane ended at %.2fs: want within 2s", oom.AtSeconds, l.EndedAt)
	}
	if n := labelled(t, r.ID()); n != 0 {
		t.Errorf("%d containers of the run remain", n)
	}
}

func TestStopKillsAndRemoves(t *testing.T) {
	m := newTestManager(t)
	r := startSpec(t, m, `{"name": "stop me", "mode": "parallel", "duration": "60s",
	  "lanes": [{"workload": {"kind": "spin", "seconds": 60}}, {"workload": {"kind": "spin", "seconds": 60}, "limits": {"cpus": "0.25"}}]}`)
	waitFor(t, 30*time.Second, "both lanes running", func() bool {
		v := r.View()
		return v.Lanes[0].State == runner.LaneRunning && v.Lanes[1].State == runner.LaneRunning
	})
	if n := labelled(t, r.ID()); n != 2 {
		t.Errorf("%d labelled containers while running, want 2", n)
	}
	if err := m.Stop(r.ID()); err != nil {
		t.Fatal(err)
	}
	v := waitDone(t, r, 30*time.Second)
	if v.State != runner.StateStopped {
		t.Errorf("state = %s, want stopped", v.State)
	}
	if n := labelled(t, r.ID()); n != 0 {
		t.Errorf("%d containers remain after stop", n)
	}
}

func TestDurationKillsLane(t *testing.T) {
	m := newTestManager(t)
	r := startSpec(t, m, `{"name": "short", "duration": "2s",
	  "lanes": [{"workload": {"kind": "spin", "seconds": 30}}]}`)
	v := waitDone(t, r, 30*time.Second)
	if !v.Lanes[0].TimedOut {
		t.Errorf("lane not marked timed out: %+v", v.Lanes[0])
	}
	if v.Lanes[0].EndedAt-v.Lanes[0].StartedAt > 10 {
		t.Errorf("lane ran %gs past a 2s duration", v.Lanes[0].EndedAt-v.Lanes[0].StartedAt)
	}
}

func TestReapRemovesLeftovers(t *testing.T) {
	eng, image, _ := realEngine(t)
	ctx := context.Background()
	plan := specs.PlannedLane{Name: "x", Workload: specs.Workload{Kind: "spin", Threads: 1, Seconds: 1}}
	res, err := eng.ContainerCreate(ctx, engine.CreateOptions("", "leftover", 0, plan, image, ""))
	if err != nil {
		t.Fatal(err)
	}
	if n := labelled(t, "leftover"); n != 1 {
		t.Fatalf("%d leftover containers, want 1", n)
	}
	if _, err := engine.Reap(ctx, eng, "leftover", slog.Default()); err != nil {
		t.Fatal(err)
	}
	if n := labelled(t, "leftover"); n != 0 {
		_, _ = eng.ContainerRemove(ctx, res.ID, client.ContainerRemoveOptions{Force: true})
		t.Fatalf("%d leftover containers after reap", n)
	}
}

func TestContainerIsHardened(t *testing.T) {
	eng, image, _ := realEngine(t)
	ctx := context.Background()
	plan := specs.PlannedLane{Name: "x", Workload: specs.Workload{Kind: "spin", Threads: 1, Seconds: 1},
		Resources: specs.Resources{Memory: 64 << 20}}
	res, err := eng.ContainerCreate(ctx, engine.CreateOptions("", "hardened", 0, plan, image, ""))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.ContainerRemove(ctx, res.ID, client.ContainerRemoveOptions{Force: true})
	ins, err := eng.ContainerInspect(ctx, res.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hc := ins.Container.HostConfig
	if hc.Privileged || !hc.ReadonlyRootfs || string(hc.NetworkMode) != "none" || len(hc.Binds) != 0 || len(hc.Mounts) != 0 {
		t.Errorf("privileged=%v readonly=%v network=%s binds=%v mounts=%v", hc.Privileged, hc.ReadonlyRootfs, hc.NetworkMode, hc.Binds, hc.Mounts)
	}
	if len(hc.CapDrop) != 1 || hc.CapDrop[0] != "ALL" || len(hc.CapAdd) != 0 {
		t.Errorf("cap-drop %v cap-add %v, want ALL and none", hc.CapDrop, hc.CapAdd)
	}
	if len(hc.SecurityOpt) != 1 || hc.SecurityOpt[0] != "no-new-privileges" {
		t.Errorf("security-opt %v", hc.SecurityOpt)
	}
	if hc.PidsLimit == nil || *hc.PidsLimit != specs.DefaultPidsLimit {
		t.Errorf("pids limit %v, want %d", hc.PidsLimit, specs.DefaultPidsLimit)
	}
	if ins.Container.Config.Labels[engine.LabelRun] != "hardened" || ins.Container.Config.User != engine.WorkloadUser {
		t.Errorf("labels %v user %q", ins.Container.Config.Labels, ins.Container.Config.User)
	}
}

// TestEngineStatsFallback runs a lane as if the engine were remote: stats
// come from the engine's stats endpoint, asked at most once a second (at
// the tick nearest a second after the last ask), counted as the calls are
// made. The engine's own timestamps are not the measure: they lag each call
// by however long the engine took to answer.
func TestEngineStatsFallback(t *testing.T) {
	eng, image, host := realEngine(t)
	host.StatsSource = "engine"
	host.StatsNote = "remote engine (simulated)"
	calls := &statsCalls{Engine: eng}
	m := workshop.NewManager(calls, workshop.Options{Image: image, Host: host, Log: slog.Default()})
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
	r := startSpec(t, m, `{"name": "engine stats", "lanes": [{"workload": {"kind": "spin", "seconds": 4}, "limits": {"cpus": "0.5"}}]}`)
	v := waitDone(t, r, time.Minute)
	if v.StatsNote == "" || v.Lanes[0].StatsSource != "engine" {
		t.Errorf("stats note %q, lane source %q: want the engine named", v.StatsNote, v.Lanes[0].StatsSource)
	}
	at := calls.times()
	least := engine.EngineInterval - runner.DefaultInterval/2
	var gaps []time.Duration
	for k := 1; k < len(at); k++ {
		gap := at[k].Sub(at[k-1])
		gaps = append(gaps, gap.Round(time.Millisecond))
		if gap < least {
			t.Errorf("stats call %d came %v after the one before: the engine is asked more than once a second", k, gaps[k-1])
		}
	}
	t.Logf("%d stats calls, %v apart", len(at), gaps)
	if len(at) < 3 || len(at) > 4+2 {
		t.Errorf("%d stats calls over a 4 s lane: want one a second", len(at))
	}
	var cpu []float64
	for _, s := range samplesOf(t, r) {
		if s.DT <= 0 {
			t.Errorf("engine sample %.2fs after the previous one", s.DT)
		}
		cpu = append(cpu, s.CPU)
	}
	if len(cpu) < 2 || math.Abs(median(cpu)-0.5) > 0.1 {
		t.Errorf("engine-sourced CPU samples %v: want about 0.5 cores", cpu)
	}
}

// statsCalls is an engine that notes when its stats are asked for.
type statsCalls struct {
	engine.Engine
	mu sync.Mutex
	at []time.Time
}

func (e *statsCalls) ContainerStats(ctx context.Context, id string, opts client.ContainerStatsOptions) (client.ContainerStatsResult, error) {
	e.mu.Lock()
	e.at = append(e.at, time.Now())
	e.mu.Unlock()
	return e.Engine.ContainerStats(ctx, id, opts)
}

func (e *statsCalls) times() []time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.at)
}

// samplesOf is every sample batch the run published, in order, flattened.
func samplesOf(t testing.TB, r *runner.Run) []engine.Sample {
	t.Helper()
	return enginetest.Samples(t, r)
}

// TestMemLaneGetsADefaultLimit: a mem lane without --memory runs under a
// limit a little above its own size, which the engine applies and the
// cgroup enforces.
func TestMemLaneGetsADefaultLimit(t *testing.T) {
	m := newTestManager(t)
	r := startSpec(t, m, `{"name": "mem default", "duration": "60s",
	  "lanes": [{"name": "mem", "workload": {"kind": "mem", "mb": 100, "seconds": 1}}]}`)
	v := waitDone(t, r, time.Minute)
	l := v.Lanes[0]
	if l.Applied == nil || l.Applied.Memory != 164<<20 {
		t.Fatalf("applied %+v, want --memory 164 MiB (its 100 MiB and 64 MiB of headroom)", l.Applied)
	}
	if l.OOMKilled || l.ExitCode == nil || *l.ExitCode != 0 {
		t.Errorf("the lane did not run within its default limit: oom %v, exit %v", l.OOMKilled, l.ExitCode)
	}
	if !strings.Contains(l.DockerRun, "--memory 164m") {
		t.Errorf("docker run %q does not show the default", l.DockerRun)
	}
}
