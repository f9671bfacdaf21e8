package workshop_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/engine/enginefake"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workshop"
)

func fakePrepare(f *enginefake.Engine) func(context.Context) (engine.HostInfo, string, error) {
	return func(ctx context.Context) (engine.HostInfo, string, error) {
		h, err := engine.ProbeHost(ctx, f, engine.HostProbe{CgroupRoot: "/nonexistent"})
		return h, "limitlab-workload:fake", err
	}
}

// fakePool is a manager on a pool of fake engines, probed every 20 ms.
func fakePool(t *testing.T, engines ...workshop.PoolEngine) *workshop.Manager {
	t.Helper()
	m := workshop.NewManager(nil, workshop.Options{Quotas: &workshop.Quotas{}, ProbeEvery: 20 * time.Millisecond, Pool: engines})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = m.Shutdown(ctx)
	})
	return m
}

func poolSubmit(t *testing.T, m *workshop.Manager, participant, specJSON string) *runner.Run {
	t.Helper()
	spec, errs := experiments.Parse([]byte(specJSON))
	if errs != nil {
		t.Fatal(errs)
	}
	plan, errs := m.Pool().Validate(spec)
	if errs != nil {
		t.Fatal(errs)
	}
	r, err := m.SubmitFrom(spec, plan, participant, "")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Placement on a pool, on fake engines: a run goes to the first idle
// engine its spec validates on, never beside another run; a run no idle
// engine can take waits; an engine that cannot be made ready stays out of
// the pool and joins once it can.
func TestFakePoolPlacement(t *testing.T) {
	small, big, late := enginefake.New(), enginefake.New(), enginefake.New()
	big.NCPU = 8
	for _, f := range []*enginefake.Engine{small, big, late} {
		f.Runtime = 300 * time.Millisecond
	}
	var lateReady atomic.Bool
	m := fakePool(t,
		workshop.PoolEngine{Name: "small", Address: "tcp://small:2376", Engine: small, Prepare: fakePrepare(small)},
		workshop.PoolEngine{Name: "big", Address: "tcp://big:2376", Engine: big, Prepare: fakePrepare(big)},
		workshop.PoolEngine{Name: "late", Address: "tcp://late:2376", Engine: late, Prepare: func(ctx context.Context) (engine.HostInfo, string, error) {
			if !lateReady.Load() {
				return engine.HostInfo{}, "", errors.New("connection refused")
			}
			return fakePrepare(late)(ctx)
		}})
	engines := m.Pool().Engines()
	if len(engines) != 3 || !engines[0].Up || !engines[1].Up || engines[2].Up || engines[2].Error != "connection refused" {
		t.Fatalf("engines %+v", engines)
	}

	// Pinned to CPUs 4-7: only big has them.
	wide := poolSubmit(t, m, "ann", `{"name": "wide", "duration": "10s", "lanes": [{"name": "a", "workload": {"kind": "spin", "seconds": 1}, "limits": {"cpuset-cpus": "4-7"}}]}`)
	narrow := poolSubmit(t, m, "bob", fakeSpec)
	third := poolSubmit(t, m, "cat", fakeSpec)
	// Placing is done by the time Submit returns.
	if v := wide.View(); v.Engine != "big" {
		t.Errorf("the wide run was placed on %q, want big", v.Engine)
	}
	if v := narrow.View(); v.Engine != "small" {
		t.Errorf("the narrow run was placed on %q, want small", v.Engine)
	}
	if v := third.View(); v.State != runner.StateQueued || v.Engine != "" {
		t.Errorf("the third run is %s on %q, want queued: both engines that are up are busy", v.State, v.Engine)
	}
	for _, r := range []*runner.Run{wide, narrow, third} {
		if v := ended(t, r); v.State != runner.StateDone {
			t.Errorf("run %s on %s: %s %s", v.ID, v.Engine, v.State, v.Error)
		}
	}

	// The engine that could not be prepared joins once it can.
	lateReady.Store(true)
	deadline := time.Now().Add(5 * time.Second)
	for !m.Pool().Engines()[2].Up {
		if time.Now().After(deadline) {
			t.Fatalf("late never joined: %+v", m.Pool().Engines()[2])
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A spec no engine can run is refused at once, naming the field.
	spec, _ := experiments.Parse([]byte(`{"name": "huge", "duration": "10s", "lanes": [{"name": "a", "workload": {"kind": "spin", "seconds": 1}, "limits": {"cpuset-cpus": "0-15"}}]}`))
	if _, errs := m.Pool().Validate(spec); len(errs) == 0 || errs[0].Field != "cpuset-cpus" {
		t.Errorf("a cpuset no engine has: %v", errs)
	}
}

// An engine whose host changes under it (here its CPUs) is made ready
// again once its run has ended, and takes no other run before: what runs
// may ask of it was probed on the host it was.
func TestFakePoolEngineThatChangesIsPreparedAgain(t *testing.T) {
	f := enginefake.New()
	f.Runtime = 100 * time.Millisecond
	var mu sync.Mutex
	var prepared []time.Time
	m := fakePool(t, workshop.PoolEngine{Name: "e", Address: "tcp://e:2376", Engine: f, Prepare: func(ctx context.Context) (engine.HostInfo, string, error) {
		mu.Lock()
		prepared = append(prepared, time.Now())
		mu.Unlock()
		return fakePrepare(f)(ctx)
	}})
	const wide = `{"name": "wide", "duration": "10s", "lanes": [{"name": "a", "workload": {"kind": "spin", "seconds": 1}, "limits": {"cpuset-cpus": "4-7"}}]}`
	spec, _ := experiments.Parse([]byte(wide))
	if _, errs := m.Pool().Validate(spec); len(errs) == 0 {
		t.Fatal("CPUs 4-7 on a host of 2 validated")
	}
	first := poolSubmit(t, m, "ann", fakeSpec)
	f.SetNCPU(8)
	second := poolSubmit(t, m, "bob", fakeSpec)
	if v := ended(t, first); v.State != runner.StateDone {
		t.Fatalf("the first run: %s %s", v.State, v.Error)
	}
	sv := ended(t, second)
	if sv.State != runner.StateDone {
		t.Fatalf("the second run: %s %s", sv.State, sv.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(prepared) != 2 {
		t.Fatalf("prepared %d times, want twice: at start and once the host had changed", len(prepared))
	}
	if sv.StartedAt.Before(prepared[1]) {
		t.Errorf("the second run started at %v, before the changed engine was made ready again at %v", sv.StartedAt, prepared[1])
	}
	if v := m.Pool().Engines()[0]; v.Host.CPUs != 8 || !v.Up {
		t.Errorf("the engine after its change: %+v", v)
	}
	if _, errs := m.Pool().Validate(spec); len(errs) != 0 {
		t.Errorf("CPUs 4-7 on the host of 8 it became: %v", errs)
	}
}

// A run whose verdict compares a signal goes to an engine whose samples
// carry it, past an idle one whose samples lack it; a run with no verdict
// takes the first idle engine; and where no engine carries the signal,
// the run still runs, as on a single engine, its verdict saying why it
// was not judged.
func TestFakePoolPlacesByTheSignalsAVerdictNeeds(t *testing.T) {
	blind, seeing := enginefake.New(), enginefake.New()
	for _, f := range []*enginefake.Engine{blind, seeing} {
		f.Runtime = 200 * time.Millisecond
	}
	blindPrepare := func(context.Context) (engine.HostInfo, string, error) {
		h := enginefake.HostOf(blind)
		h.Samples.Missing = append(h.Samples.Missing, engine.Missing{Signal: engine.SignalCPU, Why: "a host that cannot see CPU time"})
		return h, "limitlab-workload:fake", nil
	}
	// Two parallel spins: the default verdict compares their CPU.
	const compared = `{"name": "compared", "duration": "10s", "lanes": [{"name": "a", "workload": {"kind": "spin", "seconds": 1}, "limits": {"cpus": "0.5"}}, {"name": "b", "workload": {"kind": "spin", "seconds": 1}, "limits": {"cpus": "0.25"}}]}`
	m := fakePool(t, workshop.PoolEngine{Name: "blind", Address: "tcp://blind:2376", Engine: blind, Prepare: blindPrepare},
		workshop.PoolEngine{Name: "seeing", Address: "tcp://seeing:2376", Engine: seeing, Prepare: fakePrepare(seeing)})
	judged := poolSubmit(t, m, "ann", compared)
	plain := poolSubmit(t, m, "bob", fakeSpec)
	if v := judged.View(); v.Engine != "seeing" {
		t.Errorf("a run whose verdict compares CPU went to %q, want seeing", v.Engine)
	}
	if v := plain.View(); v.Engine != "blind" {
		t.Errorf("a run without a verdict went to %q, want blind, the first idle engine", v.Engine)
	}
	ended(t, judged)
	ended(t, plain)

	only := fakePool(t, workshop.PoolEngine{Name: "blind", Address: "tcp://blind:2376", Engine: blind, Prepare: blindPrepare})
	r := poolSubmit(t, only, "cat", compared)
	v := ended(t, r)
	if v.Engine != "blind" || v.State != runner.StateDone || v.Verdict == nil || v.Verdict.Judged || !strings.Contains(v.Verdict.Explanation, "cannot see CPU time") {
		t.Errorf("on a pool that cannot judge it: %s on %q, verdict %+v", v.State, v.Engine, v.Verdict)
	}
}

// A probe that fails while a run is on the engine, and then one that is
// too slow, leave the run be: it ends done with every lane it had, the
// engine is never made ready (which reaps this server's containers) while
// it runs, and it takes no other run until a probe answers again.
func TestFakePoolProbeFailsUnderARun(t *testing.T) {
	f := enginefake.New()
	f.Runtime = 700 * time.Millisecond
	var mu sync.Mutex
	var prepared []time.Time
	m := workshop.NewManager(nil, workshop.Options{Quotas: &workshop.Quotas{}, ProbeEvery: 20 * time.Millisecond, ProbeTimeout: 50 * time.Millisecond,
		Pool: []workshop.PoolEngine{{Name: "e", Address: "tcp://e:2376", Engine: f, Prepare: func(ctx context.Context) (engine.HostInfo, string, error) {
			mu.Lock()
			prepared = append(prepared, time.Now())
			mu.Unlock()
			return fakePrepare(f)(ctx)
		}}}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = m.Shutdown(ctx)
	})
	const two = `{"name": "two", "duration": "10s", "lanes": [{"name": "a", "workload": {"kind": "spin", "seconds": 1}}, {"name": "b", "workload": {"kind": "spin", "seconds": 1}}]}`
	r := poolSubmit(t, m, "ann", two)
	waitState := func(want workshop.EngineState) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for m.Pool().Engines()[0].State != want {
			if time.Now().After(deadline) {
				t.Fatalf("the engine is %s, want %s", m.Pool().Engines()[0].State, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitState(workshop.EngineBusy)
	f.SetInfoFault(0, errors.New("connection refused"))
	waitState(workshop.EngineUnresponsive)
	// Nothing else is placed on it meanwhile.
	other := poolSubmit(t, m, "bob", fakeSpec)
	if v := other.View(); v.State != runner.StateQueued {
		t.Errorf("a second run on an engine that does not answer: %s", v.State)
	}
	f.SetInfoFault(time.Second, nil) // answers, but after the probe's timeout
	time.Sleep(150 * time.Millisecond)
	if s := m.Pool().Engines()[0].State; s != workshop.EngineUnresponsive {
		t.Errorf("after slow probes the engine is %s, want unresponsive", s)
	}
	f.SetInfoFault(0, nil)
	waitState(workshop.EngineBusy)
	v := ended(t, r)
	if v.State != runner.StateDone {
		t.Fatalf("the run: %s %s", v.State, v.Error)
	}
	for i, l := range v.Lanes {
		if l.State != runner.LaneExited || l.ExitCode == nil || *l.ExitCode != 0 || l.WallSeconds < 0.6 {
			t.Errorf("lane %d: %s, exit %v, ran %.2f s, want it to exit 0 after its whole runtime", i, l.State, l.ExitCode, l.WallSeconds)
		}
	}
	mu.Lock()
	for _, at := range prepared[1:] {
		if at.After(v.StartedAt) && at.Before(v.EndedAt) {
			t.Errorf("the engine was made ready at %v, while its run ran (%v to %v)", at, v.StartedAt, v.EndedAt)
		}
	}
	mu.Unlock()
	if ov := ended(t, other); ov.State != runner.StateDone {
		t.Errorf("the second run, once the engine answered again: %s %s", ov.State, ov.Error)
	}
}
