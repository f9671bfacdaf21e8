package workshop_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/testbed"
	"github.com/limitlab/limitlab/internal/workshop"
	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"
)

// startPool starts a dockerd per name beside the machine's and a manager
// with them as its pool; opts[name] start that engine differently.
func startPool(t testing.TB, names []string, opts map[string]testbed.DockerdOptions) (*workshop.Manager, map[string]*testbed.Dockerd) {
	t.Helper()
	bin, err := enginetest.BuildBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ds := make([]*testbed.Dockerd, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Add(1)
		go func() { defer wg.Done(); ds[i] = enginetest.StartDockerd(t, n, opts[n]) }()
	}
	wg.Wait()
	byName := map[string]*testbed.Dockerd{}
	var pool []workshop.PoolEngine
	for _, d := range ds {
		if d == nil {
			t.FailNow() // StartDockerd failed it
		}
		byName[d.Name] = d
		c := d.Client
		pool = append(pool, workshop.PoolEngine{Name: d.Name, Address: d.Host, Engine: c,
			Prepare: func(ctx context.Context) (engine.HostInfo, string, error) { return testbed.Prepare(ctx, c, bin) }})
	}
	m := workshop.NewManager(pool[0].Engine, workshop.Options{Pool: pool, Log: slog.Default(), Quotas: &workshop.Quotas{}, ProbeEvery: time.Second})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = m.Shutdown(ctx)
	})
	return m, byName
}

const spinSpec = `{"name": "spin", "duration": "60s", "lanes": [{"name": "spin", "workload": {"kind": "spin", "seconds": %s}, "limits": {"cpus": "0.5"}}]}`

// Three engines run three runs at once, one each; a fourth waits and
// starts on the first engine to free up; an IO lab goes only to an engine
// with a disk under its data root.
func TestPoolPlacesOneRunPerEngine(t *testing.T) {
	m, ds := startPool(t, []string{"pa", "pb", "pc"}, map[string]testbed.DockerdOptions{"pc": {DataRootOnTmpfs: true}})
	views := m.Pool().Engines()
	if len(views) != 3 {
		t.Fatalf("engines %+v", views)
	}
	for _, v := range views {
		if !v.Up || v.Host == nil || v.Address != ds[v.Name].Host {
			t.Fatalf("engine %s: %+v", v.Name, v)
		}
		t.Logf("engine %s: %s, stats %s, unsupported %v", v.Name, v.Host.Description, v.Host.StatsSource, v.Host.Unsupported)
	}

	// The IO lab needs the disk under the data root: pc has none.
	io := submit(t, m, "io", `{"name": "io", "duration": "60s", "lanes": [{"name": "w", "workload": {"kind": "disk-write", "mb": 8}, "limits": {"device-write-bps": "auto:20mb"}}]}`)
	short := submit(t, m, "alice", fmt.Sprintf(spinSpec, "2"))
	long := submit(t, m, "bob", fmt.Sprintf(spinSpec, "6"))
	fourth := submit(t, m, "carol", fmt.Sprintf(spinSpec, "2"))
	enginetest.WaitFor(t, time.Minute, "three runs running", func() bool {
		n := 0
		for _, r := range []*runner.Run{io, short, long} {
			if r.View().State == runner.StateRunning {
				n++
			}
		}
		return n == 3
	})
	placed := map[string]string{}
	for _, r := range []*runner.Run{io, short, long} {
		v := r.View()
		if v.Engine == "" {
			t.Fatalf("run %s running on no engine", v.ID)
		}
		if other, taken := placed[v.Engine]; taken {
			t.Fatalf("runs %s and %s share engine %s", other, v.ID, v.Engine)
		}
		placed[v.Engine] = v.ID
	}
	if e := io.View().Engine; e == "pc" {
		t.Errorf("the IO lab went to pc, whose data root is on tmpfs")
	}
	if v := fourth.View(); v.State != runner.StateQueued {
		t.Fatalf("the fourth run is %s, want queued while three engines are busy", v.State)
	}
	fv := waitDone(t, fourth, time.Minute)
	if fv.State != runner.StateDone {
		t.Fatalf("the fourth run ended %s: %s", fv.State, fv.Error)
	}
	// It started on the engine of the first of the three to end.
	var first runner.RunView
	for _, r := range []*runner.Run{io, short, long} {
		v := waitDone(t, r, time.Minute)
		if v.State != runner.StateDone {
			t.Errorf("run %s on %s: %s %s", v.ID, v.Engine, v.State, v.Error)
		}
		if first.ID == "" || v.EndedAt.Before(first.EndedAt) {
			first = v
		}
	}
	if fv.Engine != first.Engine || fv.StartedAt.Before(first.EndedAt) {
		t.Errorf("the fourth started on %s at %v; the first engine to free up was %s, at %v", fv.Engine, fv.StartedAt, first.Engine, first.EndedAt)
	}
	// Samples came from the engines' cgroup files (their cgroup parents
	// are their own).
	if v := long.View(); v.StatsNote != "" {
		t.Errorf("long's stats: %s", v.StatsNote)
	}
	if n := samplesIn(history(long.Hub())); n < 20 {
		t.Errorf("%d samples of a 6 s run at 4 Hz", n)
	}
}

// An engine killed mid-run: its run ends interrupted with its samples
// kept, the other engine's run carries on, the engine leaves the pool and
// comes back when it answers again, and its containers are removed then.
func TestPoolEngineLostMidRun(t *testing.T) {
	m, ds := startPool(t, []string{"pd", "pe"}, nil)
	a := submit(t, m, "alice", fmt.Sprintf(spinSpec, "8"))
	b := submit(t, m, "bob", fmt.Sprintf(spinSpec, "8"))
	enginetest.WaitFor(t, time.Minute, "both running with samples", func() bool {
		return samplesIn(history(a.Hub())) > 4 && samplesIn(history(b.Hub())) > 4
	})
	lost := a.View().Engine
	ds[lost].Kill()
	av := waitDone(t, a, time.Minute)
	if av.State != runner.StateInterrupted || samplesIn(history(a.Hub())) < 4 {
		t.Fatalf("the run on the killed engine %s: %s (%s), %d samples", lost, av.State, av.Error, samplesIn(history(a.Hub())))
	}
	t.Logf("interrupted: %s", av.Error)
	if bv := waitDone(t, b, time.Minute); bv.State != runner.StateDone {
		t.Errorf("the run on %s: %s %s", bv.Engine, bv.State, bv.Error)
	}
	down := func() (workshop.EngineView, bool) {
		for _, v := range m.Pool().Engines() {
			if v.Name == lost {
				return v, !v.Up
			}
		}
		return workshop.EngineView{}, false
	}
	if v, isDown := down(); !isDown {
		t.Fatalf("the killed engine is listed up: %+v", v)
	}
	// A run submitted now goes to the engine left.
	c := submit(t, m, "carol", fmt.Sprintf(spinSpec, "1"))
	if cv := waitDone(t, c, time.Minute); cv.State != runner.StateDone || cv.Engine == lost {
		t.Errorf("a run after the loss: %s on %s", cv.State, cv.Engine)
	}

	// The engine comes back on its data root: the probe finds it, and
	// removes what the interrupted run left there.
	back := enginetest.StartDockerd(t, lost, testbed.DockerdOptions{})
	enginetest.WaitFor(t, time.Minute, "the engine back in the pool", func() bool { _, isDown := down(); return !isDown })
	enginetest.WaitFor(t, time.Minute, "the interrupted run's containers removed", func() bool {
		list, err := back.Client.ContainerList(context.Background(), client.ContainerListOptions{All: true,
			Filters: make(client.Filters).Add("label", engine.LabelRun+"="+av.ID)})
		return err == nil && len(list.Items) == 0
	})
}

// BenchmarkPoolQueue submits 30 one-second runs from 30 participants at
// once to a pool of three engines and to a pool of one of them, and
// reports how long the runs waited in the queue and how long each took
// from leaving it to its lane's first sample (the engine's start time).
// One iteration is the whole batch: run it with -benchtime 1x.
func BenchmarkPoolQueue(b *testing.B) {
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("engines=%d", n), func(b *testing.B) {
			names := []string{"qa", "qb", "qc"}[:n]
			m, _ := startPool(b, names, nil)
			for range b.N {
				var runs []*runner.Run
				for i := range 30 {
					sp, p := enginetest.Plan(b, m, fmt.Sprintf(spinSpec, "1"))
					r, err := m.SubmitFrom(sp, p, fmt.Sprintf("p%02d", i), "")
					if err != nil {
						b.Fatal(err)
					}
					runs = append(runs, r)
				}
				var waits, starts []float64
				for _, r := range runs {
					v := enginetest.WaitDone(b, r, 10*time.Minute)
					if v.State != runner.StateDone {
						b.Fatalf("run %s: %s %s", v.ID, v.State, v.Error)
					}
					waits = append(waits, v.StartedAt.Sub(v.CreatedAt).Seconds())
					starts = append(starts, v.Lanes[0].StartedAt)
				}
				slices.Sort(waits)
				slices.Sort(starts)
				b.ReportMetric(waits[len(waits)/2], "wait-p50-s")
				b.ReportMetric(waits[len(waits)-1], "wait-max-s")
				b.ReportMetric(starts[len(starts)/2], "start-p50-s")
				b.ReportMetric(starts[len(starts)-1], "start-max-s")
			}
		})
	}
}

// A pooled IO lab carries out the plan of the engine it is placed on: the
// device "auto" is the disk under that engine's data root, here a loop
// device of its own, not the first engine's disk.
func TestPoolIOLabGetsItsEnginesDevice(t *testing.T) {
	m, _ := startPool(t, []string{"pf", "pg"}, map[string]testbed.DockerdOptions{"pg": {DataRootOnLoop: true}})
	devices := map[string]string{}
	for _, v := range m.Pool().Engines() {
		devices[v.Name] = v.Host.DataRootDevice
		t.Logf("%s: data root on %s, cannot apply %v", v.Name, v.Host.DataRootDevice, v.Host.Unsupported)
	}
	if devices["pf"] == "" || devices["pg"] == "" || devices["pf"] == devices["pg"] {
		t.Fatalf("the engines' data root disks: %v, want two", devices)
	}
	hold := submit(t, m, "alice", fmt.Sprintf(spinSpec, "30")) // takes pf, the first
	io := submit(t, m, "bob", `{"name": "io", "duration": "60s", "lanes": [{"name": "w", "workload": {"kind": "disk-write", "mb": 8}, "limits": {"device-write-bps": "auto:20mb"}}]}`)
	v := waitDone(t, io, time.Minute)
	_ = m.Stop(hold.ID())
	if v.State != runner.StateDone || v.Engine != "pg" {
		t.Fatalf("the IO run: %s on %s (%s), want done on pg", v.State, v.Engine, v.Error)
	}
	l := v.Lanes[0]
	if want := "--device-write-bps " + devices["pg"] + ":"; !strings.Contains(l.DockerRun, want) {
		t.Errorf("the lane on pg ran as %q, want %q (pf's disk is %s)", l.DockerRun, want, devices["pf"])
	}
	// Read back from the running container: the throttle is on pg's disk.
	var st syscall.Stat_t
	if err := syscall.Stat(devices["pg"], &st); err != nil {
		t.Fatal(err)
	}
	majmin := fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
	found := false
	for _, r := range l.Kernel.Files {
		if r.Flag == "--device-write-bps" {
			found = true
			if !r.Holds || !strings.Contains(r.Got, majmin) {
				t.Errorf("the lane's %s holds %q, want pg's disk %s", r.File, r.Got, majmin)
			}
		}
	}
	if !found {
		t.Errorf("no device-write-bps file read back: %+v", l.Kernel)
	}
}

// An engine too slow to answer its probes for 30 s (its daemon paused,
// its containers running on) keeps its run: the run finishes with its lane
// intact, or ends interrupted saying why; it is never reported done with a
// lane the server killed, and the engine is not made ready under it.
func TestPoolEnginePausedMidRun(t *testing.T) {
	m, ds := startPool(t, []string{"ph"}, nil)
	r := submit(t, m, "alice", `{"name": "long", "duration": "120s", "lanes": [{"name": "spin", "workload": {"kind": "spin", "seconds": 45}, "limits": {"cpus": "0.25"}}]}`)
	enginetest.WaitFor(t, time.Minute, "the run sampled", func() bool { return samplesIn(history(r.Hub())) > 4 })
	ds["ph"].Pause()
	paused := time.Now()
	enginetest.WaitFor(t, time.Minute, "the engine seen unresponsive", func() bool { return m.Pool().Engines()[0].State == workshop.EngineUnresponsive })
	time.Sleep(time.Until(paused.Add(30 * time.Second)))
	ds["ph"].Resume()
	t.Logf("paused for %s", time.Since(paused).Round(time.Second))
	v := waitDone(t, r, 2*time.Minute)
	l := v.Lanes[0]
	switch v.State {
	case runner.StateDone:
		if l.ExitCode == nil || *l.ExitCode != 0 || l.WallSeconds < 42 {
			t.Errorf("the run is done, but its lane exited %v after %.1f s of 45", l.ExitCode, l.WallSeconds)
		}
	case runner.StateInterrupted:
		if v.Error == "" {
			t.Error("interrupted, saying nothing of why")
		}
		t.Logf("interrupted: %s", v.Error)
	default:
		t.Errorf("the run ended %s: %s", v.State, v.Error)
	}
	// The engine is freed as the run's goroutine ends, just after the run
	// says it ended.
	enginetest.WaitFor(t, 10*time.Second, "the engine freed after its run", func() bool {
		s := m.Pool().Engines()[0].State
		return s == workshop.EngineReady || s == workshop.EnginePreparing
	})
}
