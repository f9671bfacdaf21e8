package workshop_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine/enginefake"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/store"
	"github.com/limitlab/limitlab/internal/workshop"
)

// These tests use the fake engine: the scheduling logic in milliseconds,
// with no Docker. The same paths are tested on the real engine elsewhere.

const fakeSpec = `{"name": "fake", "mode": "parallel", "duration": "10s",
	"lanes": [{"name": "a", "workload": {"kind": "spin", "seconds": 1}, "limits": {"cpus": "0.5", "memory": "64m"}}]}`

// fakeStore is a store in a directory of the test's own, closed once the
// test's manager has shut down (cleanups run last first).
func fakeStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func fakeManager(t *testing.T, fake *enginefake.Engine, opts workshop.Options) *workshop.Manager {
	t.Helper()
	opts.Host = enginefake.HostOf(fake)
	if opts.Quotas == nil {
		opts.Quotas = &workshop.Quotas{}
	}
	m := workshop.NewManager(fake, opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = m.Shutdown(ctx)
		if n := fake.Counts().Containers; n != 0 {
			t.Errorf("%d containers left on the fake engine", n)
		}
	})
	return m
}

func fakeSubmit(t *testing.T, m *workshop.Manager, participant, specJSON string) (*runner.Run, error) {
	t.Helper()
	spec, errs := experiments.Parse([]byte(specJSON))
	if errs != nil {
		t.Fatal(errs)
	}
	plan, errs := experiments.Validate(spec, m.Pool().Host().Experiments())
	if errs != nil {
		t.Fatal(errs)
	}
	return m.SubmitFrom(spec, plan, participant, "")
}

func mustSubmit(t *testing.T, m *workshop.Manager, participant string) *runner.Run {
	t.Helper()
	r, err := fakeSubmit(t, m, participant, fakeSpec)
	if err != nil {
		t.Fatalf("submit for %s: %v", participant, err)
	}
	return r
}

func ended(t *testing.T, r *runner.Run) runner.RunView {
	t.Helper()
	select {
	case <-r.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("run %s did not end: %+v", r.ID(), r.View())
	}
	return r.View()
}

func TestFakeQueueServesParticipantsInTurn(t *testing.T) {
	fake := enginefake.New()
	fake.Runtime = 20 * time.Millisecond
	m := fakeManager(t, fake, workshop.Options{MaxRunning: 1})
	// Ann submits three before Bob submits one: Bob's waits behind only
	// one of Ann's.
	runs := []*runner.Run{mustSubmit(t, m, "ann"), mustSubmit(t, m, "ann"), mustSubmit(t, m, "ann"), mustSubmit(t, m, "bob")}
	var starts []time.Time
	for _, r := range runs {
		v := ended(t, r)
		if v.State != runner.StateDone {
			t.Fatalf("run %s ended %s: %s", r.ID(), v.State, v.Error)
		}
		starts = append(starts, v.StartedAt)
	}
	// Served: ann 1, bob, ann 2, ann 3.
	if !(starts[0].Before(starts[3]) && starts[3].Before(starts[1]) && starts[1].Before(starts[2])) {
		t.Errorf("start order ann1 %v, ann2 %v, ann3 %v, bob %v: want ann1 < bob < ann2 < ann3",
			starts[0], starts[1], starts[2], starts[3])
	}
}

func TestFakeQuotaRefusals(t *testing.T) {
	fake := enginefake.New()
	fake.Runtime = time.Minute
	m := fakeManager(t, fake, workshop.Options{MaxRunning: 1, Quotas: &workshop.Quotas{
		Participant: workshop.Limits{Runs: 1}, Host: workshop.Limits{CPUs: 1, Memory: 1 << 30}}})
	mustSubmit(t, m, "ann")
	var q *workshop.QuotaError
	if _, err := fakeSubmit(t, m, "ann", fakeSpec); !errors.As(err, &q) || q.Scope != "participant" || q.Limit != "runs" {
		t.Errorf("second run of a participant allowed one: %v", err)
	}
	three := strings.Replace(fakeSpec, `"cpus": "0.5"`, `"cpus": "1.5"`, 1)
	if _, err := fakeSubmit(t, m, "bob", three); !errors.As(err, &q) || q.Scope != "host" || q.Limit != "cpus" || q.Over != 0.5 {
		t.Errorf("a run over the host's CPUs: %v (%+v)", err, q)
	}
	noMem := strings.Replace(fakeSpec, `, "memory": "64m"`, "", 1)
	if _, err := fakeSubmit(t, m, "cyd", noMem); !errors.As(err, &q) || q.Limit != "memory" || q.Lane != 0 {
		t.Errorf("a lane without --memory under a memory quota: %v", err)
	}
	if n := fake.Counts().Creates; n > 1 {
		t.Errorf("refused runs created containers: %d creates", n)
	}
}

func TestFakeQueueExpiry(t *testing.T) {
	fake := enginefake.New()
	fake.Runtime = time.Minute
	m := fakeManager(t, fake, workshop.Options{MaxRunning: 1, MaxWait: 50 * time.Millisecond})
	long := mustSubmit(t, m, "ann")
	waiting := mustSubmit(t, m, "bob")
	v := ended(t, waiting)
	if v.State != runner.StateRefused || !strings.Contains(v.Error, "waited") {
		t.Errorf("the waiting run ended %s: %q", v.State, v.Error)
	}
	if fake.Counts().Creates != 1 {
		t.Errorf("%d containers created, want only the long run's", fake.Counts().Creates)
	}
	if err := m.Stop(long.ID()); err != nil {
		t.Fatal(err)
	}
	if v := ended(t, long); v.State != runner.StateStopped {
		t.Errorf("the long run ended %s", v.State)
	}
}

func TestFakeStopWhileCreating(t *testing.T) {
	fake := enginefake.New()
	fake.CreateGate = make(chan struct{})
	m := fakeManager(t, fake, workshop.Options{})
	r := mustSubmit(t, m, "ann")
	for deadline := time.Now().Add(5 * time.Second); fake.Counts().CreatesWaiting == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the run never asked for its container")
		}
	}
	if err := m.Stop(r.ID()); err != nil {
		t.Fatal(err)
	}
	close(fake.CreateGate) // the engine finishes the create after the stop
	v := ended(t, r)
	if v.State != runner.StateStopped {
		t.Errorf("ended %s, want stopped", v.State)
	}
	if fake.Counts().Creates != 1 || fake.Counts().Containers != 0 {
		t.Errorf("creates %d, containers left %d: the container created after the stop must be removed", fake.Counts().Creates, fake.Counts().Containers)
	}
}

func TestFakeShutdownDuringSubmit(t *testing.T) {
	fake := enginefake.New()
	fake.Runtime = time.Minute
	m := workshop.NewManager(fake, workshop.Options{Host: enginefake.HostOf(fake), Quotas: &workshop.Quotas{}, MaxRunning: 2})
	var mu sync.Mutex
	var runs []*runner.Run
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := fakeSubmit(t, m, "", fakeSpec)
			if err != nil {
				if !errors.Is(err, workshop.ErrShuttingDown) {
					t.Errorf("submit: %v", err)
				}
				return
			}
			mu.Lock()
			runs = append(runs, r)
			mu.Unlock()
		}()
	}
	time.Sleep(5 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if _, err := fakeSubmit(t, m, "", fakeSpec); !errors.Is(err, workshop.ErrShuttingDown) {
		t.Errorf("submit after shutdown: %v", err)
	}
	for _, r := range runs {
		if v := ended(t, r); !v.Ended {
			t.Errorf("run %s is %s after shutdown", r.ID(), v.State)
		}
	}
	if n := fake.Counts().Containers; n != 0 {
		t.Errorf("%d containers left after shutdown", n)
	}
}

func TestFakeImportChecks(t *testing.T) {
	fake := enginefake.New()
	fake.Runtime = 10 * time.Millisecond
	st := fakeStore(t)
	m := fakeManager(t, fake, workshop.Options{Store: st})
	r := mustSubmit(t, m, "ann")
	ended(t, r)
	e, err := m.Archive().Export(r.ID())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Archive().ImportExport(e); err != nil {
		t.Fatalf("import of an export: %v", err)
	}
	mutate := func(f func(e *workshop.Export)) workshop.Export {
		b, _ := json.Marshal(e)
		var c workshop.Export
		_ = json.Unmarshal(b, &c)
		f(&c)
		return c
	}
	// What the file says of commands and times is not taken as it is.
	planted := mutate(func(e *workshop.Export) {
		e.Run.Lanes[0].DockerRun = "docker run --privileged -v /:/host limitlab-workload md5"
		e.Run.CreatedAt = time.Now().Add(100 * 24 * time.Hour)
		e.Stream = append(e.Stream, json.RawMessage(`{"type":"samples","samples":[{"lane":0,"t":1,"cpu":0.5,"evil":"<script>"}]}`))
		// Steps the run's spec does not have, and a series of runs this
		// server never made.
		e.Run.Steps = []runner.StepView{{Prompt: "<script>alert(1)</script>", State: "hacked", Value: 7}}
		e.Run.Series = &runner.Series{ID: "../../admin", Runs: []string{"x"}}
		e.Run.Engine = "<img src=x onerror=alert(1)>"
	})
	id, err := m.Archive().ImportExport(planted)
	if err != nil {
		t.Fatalf("import of a planted file: %v", err)
	}
	v, _ := m.Archive().View(id)
	if l := v.Lanes[0]; strings.Contains(l.DockerRun, "privileged") || !strings.Contains(l.DockerRun, "--cpus 0.5") {
		t.Errorf("docker run taken from the file: %q", l.DockerRun)
	}
	if v.Steps != nil || v.Series != nil || v.Engine != "" {
		t.Errorf("steps %+v, series %+v and engine %q taken from the file", v.Steps, v.Series, v.Engine)
	}
	if v.CreatedAt.After(time.Now()) {
		t.Errorf("created at %s, in the future", v.CreatedAt)
	}
	// A run of a lab this server lacks is a custom run of its lanes here.
	foreign, err := m.Archive().ImportExport(mutate(func(e *workshop.Export) { e.Run.Spec.Lab, e.Run.Lab = "no-such-lab", "no-such-lab" }))
	if err != nil {
		t.Fatalf("import of a run of another server's lab: %v", err)
	}
	if v, _ := m.Archive().View(foreign); v.Lab != "" || v.Spec.Lab != "" || len(v.Spec.Lanes) != 1 {
		t.Errorf("a run of another server's lab imported as lab %q, spec lab %q, %d lanes", v.Lab, v.Spec.Lab, len(v.Spec.Lanes))
	}
	feed, _ := m.Archive().Feed(id)
	for _, msg := range feed.History() {
		if strings.Contains(string(msg), "evil") {
			t.Errorf("a field this server does not know was stored: %s", msg)
		}
	}
	for _, tt := range refusedImports(mutate) {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.Archive().ImportExport(tt.e)
			var invalid *workshop.InvalidImportError
			if !errors.As(err, &invalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("import: %v, want an invalid import naming %q", err, tt.want)
			}
		})
	}
}

// refusedImport is an export an import must refuse, and what its error
// names.
type refusedImport struct {
	name string
	e    workshop.Export
	want string
}

// refusedImports are TestFakeImportChecks' refusals, each a change of a
// good export (mutate).
func refusedImports(mutate func(func(e *workshop.Export)) workshop.Export) []refusedImport {
	return []refusedImport{
		{"another format", mutate(func(e *workshop.Export) { e.Format = "x" }), "not a Limit Lab run export"},
		{"no lanes", mutate(func(e *workshop.Export) { e.Run.Lanes = nil }), "0 lanes"},
		{"a sample of a lane it lacks", mutate(func(e *workshop.Export) {
			e.Stream = append(e.Stream, json.RawMessage(`{"type":"samples","samples":[{"lane":7}]}`))
		}), "lane 7"},
		{"an unknown message", mutate(func(e *workshop.Export) { e.Stream = append(e.Stream, json.RawMessage(`{"type":"x"}`)) }), "unknown type"},
		{"a change to a lane it lacks", mutate(func(e *workshop.Export) {
			e.Run.Changes = append(e.Run.Changes, runner.ChangeRecord{Lane: 9, Limits: specs.Limits{CPUs: "1"}})
		}), "lane 9"},
		{"an event on a lane it lacks", mutate(func(e *workshop.Export) {
			e.Run.Events = append(e.Run.Events, runner.EventRecord{Lane: 5, Kind: "oom"})
		}), "lane 5"},
		{"an event of no kind the engine has", mutate(func(e *workshop.Export) { e.Run.Events = append(e.Run.Events, runner.EventRecord{Lane: 0, Kind: "x"}) }), `"x"`},
		{"a lane name past the spec's limit", mutate(func(e *workshop.Export) { e.Run.Spec.Lanes[0].Name = strings.Repeat("n", 65) }), "at most 64"},
		{"applied limits with a shell in a device path", mutate(func(e *workshop.Export) {
			e.Run.Lanes[0].Applied.ReadBps = specs.DeviceRate{Path: "/dev/sda;reboot", Rate: 1}
		}), "device path"},
		{"a lane state that is not one", mutate(func(e *workshop.Export) { e.Run.Lanes[0].State = "hacked" }), "hacked"},
		{"a container id that is not one", mutate(func(e *workshop.Export) { e.Run.Lanes[0].Container = "$(reboot)" }), "container"},
		{"more samples than its duration and interval make", mutate(func(e *workshop.Export) {
			for range 3000 {
				e.Stream = append(e.Stream, json.RawMessage(`{"type":"samples","samples":[{"lane":0,"t":1}]}`))
			}
		}), "samples of lane 0, more than the run's duration and interval make"},
		{"more host samples than its ticks", mutate(func(e *workshop.Export) {
			for range 3000 {
				e.Stream = append(e.Stream, json.RawMessage(`{"type":"host","host":{"t":1,"dt":0.25}}`))
			}
		}), "host samples"},
		{"one message of megabytes", mutate(func(e *workshop.Export) {
			e.Stream = append(e.Stream, json.RawMessage(`{"type":"samples","samples":[`+strings.Repeat(`{"lane":0},`, 200_000)+`{"lane":0}]}`))
		}), "larger than the 1024 KiB a message may be"},
		{"a resize of a container", mutate(func(e *workshop.Export) {
			e.Run.Changes = append(e.Run.Changes, runner.ChangeRecord{Lane: 0, Limits: specs.Limits{CPUs: "1"},
				Resize: &runner.ResizeRecord{State: "Done", QoS: "Burstable", Command: "kubectl delete ns kube-system"}})
		}), "not a pod"},
	}
}

// TestFakeLiveChangesKeepToQuotas: a live change is checked as a
// submission is, and what it grants counts against the next submission.
func TestFakeLiveChangesKeepToQuotas(t *testing.T) {
	fake := enginefake.New()
	fake.Runtime = time.Minute
	m := fakeManager(t, fake, workshop.Options{MaxRunning: 2, Quotas: &workshop.Quotas{
		Participant: workshop.Limits{CPUs: 1, Memory: 1 << 30}}})
	small := strings.Replace(fakeSpec, `"cpus": "0.5", "memory": "64m"`, `"cpus": "0.1", "memory": "32m"`, 1)
	r, err := fakeSubmit(t, m, "ann", small)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); r.View().Lanes[0].State != runner.LaneRunning; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the lane never ran")
		}
	}
	ctx := context.Background()
	var q *workshop.QuotaError
	if _, err := m.Changes().UpdateLimits(ctx, r.ID(), 0, specs.Limits{CPUs: "2"}); !errors.As(err, &q) || q.Limit != "cpus" || q.Lane != 0 {
		t.Errorf("a change to --cpus 2 over a 1-CPU quota: %v", err)
	}
	var verrs specs.Errors
	if _, err := m.Changes().UpdateLimits(ctx, r.ID(), 0, specs.Limits{Memory: "16g"}); !errors.As(err, &verrs) || verrs[0].Field != "memory" {
		t.Errorf("a change to --memory 16g on an 8 GiB host: %v", err)
	}
	if v := r.View(); v.Lanes[0].Applied.NanoCPUs != 1e8 || v.Lanes[0].Applied.Memory != 32<<20 {
		t.Errorf("refused changes reached the engine: %+v", v.Lanes[0].Applied)
	}
	if _, err := m.Changes().UpdateLimits(ctx, r.ID(), 0, specs.Limits{CPUs: "0.5"}); err != nil {
		t.Fatalf("a change within the quota: %v", err)
	}
	// 0.5 now counts: a second run of 0.6 is over the participant's 1 CPU.
	second := strings.Replace(fakeSpec, `"cpus": "0.5"`, `"cpus": "0.6"`, 1)
	if _, err := fakeSubmit(t, m, "ann", second); !errors.As(err, &q) || q.Limit != "cpus" {
		t.Errorf("a second run after the change: %v", err)
	}
	if err := m.Stop(r.ID()); err != nil {
		t.Fatal(err)
	}
	ended(t, r)
}

func TestFakeFullDiskRefusesNewRuns(t *testing.T) {
	fake := enginefake.New()
	st := fakeStore(t)
	m := fakeManager(t, fake, workshop.Options{Store: st, StoreMinFree: 1 << 62})
	if _, err := fakeSubmit(t, m, "ann", fakeSpec); !errors.Is(err, workshop.ErrStore) || !strings.Contains(err.Error(), "free") {
		t.Errorf("a run on a store without room: %v", err)
	}
	if fake.Counts().Creates != 0 {
		t.Error("a refused run created containers")
	}
	// An import is recorded as a run is, and refused alike.
	e := workshop.Export{Format: workshop.ExportFormat, Version: 1}
	if _, err := m.Archive().ImportExport(e); !errors.Is(err, workshop.ErrStore) || !strings.Contains(err.Error(), "free") {
		t.Errorf("an import on a store without room: %v", err)
	}
}

// TestFakeStoreKeepsItsBound: past Keep.Runs, the oldest ended runs are
// removed as new ones end; the featured run stays.
func TestFakeStoreKeepsItsBound(t *testing.T) {
	fake := enginefake.New()
	fake.Runtime = 10 * time.Millisecond
	st := fakeStore(t)
	m := fakeManager(t, fake, workshop.Options{Store: st, Keep: workshop.Retention{Runs: 3}})
	var ids []string
	for i := range 7 {
		r, err := fakeSubmit(t, m, "ann", fakeSpec)
		if err != nil {
			t.Fatal(err)
		}
		ended(t, r)
		ids = append(ids, r.ID())
		if i == 0 {
			if err := m.Featured().Feature(r.ID()); err != nil {
				t.Fatal(err)
			}
		}
	}
	var kept []string
	enginetest.WaitFor(t, 10*time.Second, "the store to hold the newest three ended runs and the featured one", func() bool {
		kept = kept[:0]
		for _, v := range m.Archive().List("", 100) {
			kept = append(kept, v.ID)
		}
		return len(kept) == 4
	})
	for _, id := range []string{ids[0], ids[4], ids[5], ids[6]} {
		if !slices.Contains(kept, id) {
			t.Errorf("run %s was removed; kept %v", id, kept)
		}
	}
}
