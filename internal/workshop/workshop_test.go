package workshop_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/hub"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/store"
	"github.com/limitlab/limitlab/internal/workshop"
)

func openStore(t *testing.T, dir string) *store.Store {
	t.Helper()
	st, err := store.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func plan(t *testing.T, m *workshop.Manager, specJSON string) (specs.Spec, specs.Plan) {
	return enginetest.Plan(t, m, specJSON)
}

func submit(t *testing.T, m *workshop.Manager, participant, specJSON string) *runner.Run {
	t.Helper()
	spec, p := plan(t, m, specJSON)
	r, err := m.SubmitFrom(spec, p, participant, "")
	if err != nil {
		t.Fatalf("submit for %s: %v", participant, err)
	}
	return r
}

func waitDone(t *testing.T, r *runner.Run, within time.Duration) runner.RunView {
	return enginetest.WaitDone(t, r, within)
}

func history(h *hub.Hub) [][]byte { return h.History() }

func samplesIn(msgs [][]byte) int {
	n := 0
	for _, b := range msgs {
		var m runner.Message
		if json.Unmarshal(b, &m) == nil && m.Type == "samples" {
			n += len(m.Samples)
		}
	}
	return n
}

const shortRun = `{"name": "short", "duration": "30s",
  "lanes": [{"name": "a", "workload": {"kind": "spin", "seconds": 2}, "limits": {"cpus": "0.5"}},
            {"name": "b", "workload": {"kind": "spin", "seconds": 2}, "limits": {"cpus": "0.25"}}]}`

// TestStoredRunReplaysIdenticallyAfterRestart: a finished run, read back
// by a new manager over the same store, streams the same messages and
// shows the same view as the manager that ran it.
func TestStoredRunReplaysIdenticallyAfterRestart(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	m := enginetest.Manager(t, func(o *workshop.Options) { o.Store = st })
	r := submit(t, m, "ann", shortRun)
	v := waitDone(t, r, time.Minute)
	if v.State != runner.StateDone {
		t.Fatalf("state %s: %s", v.State, v.Error)
	}
	live := history(r.Hub())
	if samplesIn(live) < 8 {
		t.Fatalf("only %d samples in the live stream", samplesIn(live))
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st2 := openStore(t, dir)
	defer st2.Close()
	m2 := enginetest.Manager(t, func(o *workshop.Options) { o.Store = st2 })
	feed, ok := m2.Archive().Feed(r.ID())
	if !ok {
		t.Fatal("the run is not in the store after a restart")
	}
	replayed := history(feed)
	if len(replayed) != len(live) {
		t.Fatalf("replay has %d messages, the live stream had %d", len(replayed), len(live))
	}
	for i := range live {
		if !bytes.Equal(live[i], replayed[i]) {
			t.Fatalf("message %d differs:\nlive   %s\nreplay %s", i, live[i], replayed[i])
		}
	}
	a, _ := json.Marshal(v)
	v2, _ := m2.Archive().View(r.ID())
	b, _ := json.Marshal(v2)
	if !bytes.Equal(a, b) {
		t.Errorf("view differs after restart:\nbefore %s\nafter  %s", a, b)
	}
	list := m2.Archive().List("", 10)
	if len(list) != 1 || list[0].ID != r.ID() || list[0].State != runner.StateDone {
		t.Errorf("history after restart: %+v", list)
	}
	if s := workshop.Summary(list[0]); !strings.Contains(s, "a: ") {
		t.Errorf("summary %q names no lane", s)
	}
}

// TestExportThenImportKeepsEverything: an exported run imported again has
// the same view but for its id, and streams the same samples.
func TestExportThenImportKeepsEverything(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	m := enginetest.Manager(t, func(o *workshop.Options) { o.Store = st })
	r := submit(t, m, "ann", shortRun)
	waitDone(t, r, time.Minute)
	e, err := m.Archive().Export(r.ID())
	if err != nil {
		t.Fatal(err)
	}
	file, _ := json.Marshal(e)
	var back workshop.Export
	if err := json.Unmarshal(file, &back); err != nil {
		t.Fatal(err)
	}
	id, err := m.Archive().ImportExport(back)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := m.Archive().View(id)
	impFeed, _ := m.Archive().Feed(id)
	if !ok || id == r.ID() {
		t.Fatalf("imported run %q not found, or same id as the original", id)
	}
	want := r.View()
	if !got.Imported {
		t.Error("the imported run is not marked imported")
	}
	want.ID, got.ID, got.Imported = "", "", false
	a, _ := json.Marshal(want)
	b, _ := json.Marshal(got)
	if !bytes.Equal(a, b) {
		t.Errorf("imported view differs:\nexported %s\nimported %s", a, b)
	}
	if n, k := samplesIn(history(r.Hub())), samplesIn(history(impFeed)); n != k || n == 0 {
		t.Errorf("samples: %d exported, %d imported", n, k)
	}

	bad := back
	bad.Format = "something-else"
	if _, err := m.Archive().ImportExport(bad); err == nil || !strings.Contains(err.Error(), "not a Limit Lab run export") {
		t.Errorf("import of another format: %v", err)
	}
	bad = back
	bad.Stream = append(append([]json.RawMessage(nil), back.Stream...), json.RawMessage(`{"type":"samples","samples":[{"lane":7}]}`))
	if _, err := m.Archive().ImportExport(bad); err == nil || !strings.Contains(err.Error(), "lane 7") {
		t.Errorf("import of a sample of a lane the run lacks: %v", err)
	}
}

// TestQueueServesTwoParticipantsAlternately: with one run at a time, Ann's
// second run waits behind Bob's first, though Ann submitted it earlier.
func TestQueueServesTwoParticipantsAlternately(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	m := enginetest.Manager(t, func(o *workshop.Options) { o.Store = st; o.MaxRunning = 1 })
	one := `{"name": "%s", "duration": "20s", "lanes": [{"workload": {"kind": "spin", "seconds": 1}, "limits": {"cpus": "0.2"}}]}`
	a1 := submit(t, m, "ann", strings.Replace(one, "%s", "ann 1", 1))
	a2 := submit(t, m, "ann", strings.Replace(one, "%s", "ann 2", 1))
	a3 := submit(t, m, "ann", strings.Replace(one, "%s", "ann 3", 1))
	b1 := submit(t, m, "bob", strings.Replace(one, "%s", "bob 1", 1))
	b2 := submit(t, m, "bob", strings.Replace(one, "%s", "bob 2", 1))

	// Ann's first runs at once; the others wait in turn.
	if v := a1.View(); v.QueuePosition != 0 {
		t.Errorf("the first run waits (position %d) on an idle host", v.QueuePosition)
	}
	for want, r := range map[int]*runner.Run{1: b1, 2: a2, 3: b2, 4: a3} {
		if got := r.View().QueuePosition; got != want {
			t.Errorf("%s: queue position %d, want %d", r.View().Name, got, want)
		}
	}
	order := []*runner.Run{a1, b1, a2, b2, a3}
	for _, r := range order {
		if v := waitDone(t, r, 2*time.Minute); v.State != runner.StateDone {
			t.Fatalf("%s: %s %s", v.Name, v.State, v.Error)
		}
	}
	// Each started once the one before it had ended: one at a time, in
	// turn.
	for i := 1; i < len(order); i++ {
		prev, cur := order[i-1].View(), order[i].View()
		if cur.StartedAt.Before(prev.EndedAt) {
			t.Errorf("%s started at %s, before %s ended at %s", cur.Name, cur.StartedAt.Format(time.StampMilli),
				prev.Name, prev.EndedAt.Format(time.StampMilli))
		}
	}
}

// TestQueuedRunIsRefusedAfterTheLongestWait and a quota refusal starts
// nothing.
func TestQueueWaitAndQuotas(t *testing.T) {
	m := enginetest.Manager(t, func(o *workshop.Options) {
		o.MaxRunning, o.MaxWait = 1, 2*time.Second
		o.Quotas = &workshop.Quotas{Participant: workshop.Limits{Runs: 1}, Host: workshop.Limits{CPUs: 1}}
	})
	long := submit(t, m, "ann", `{"name": "long", "duration": "60s", "lanes": [{"workload": {"kind": "spin", "seconds": 30}, "limits": {"cpus": "0.2"}}]}`)
	waiting := submit(t, m, "bob", `{"name": "waits", "duration": "60s", "lanes": [{"workload": {"kind": "spin", "seconds": 1}, "limits": {"cpus": "0.2"}}]}`)
	if p := waiting.View().QueuePosition; p != 1 {
		t.Errorf("queue position %d, want 1", p)
	}

	// Ann already has a run: her second is refused by her limit.
	spec, p := plan(t, m, `{"name": "second", "lanes": [{"workload": {"kind": "spin", "seconds": 1}, "limits": {"cpus": "0.1"}}]}`)
	_, err := m.SubmitFrom(spec, p, "ann", "")
	var q *workshop.QuotaError
	if !errors.As(err, &q) || q.Scope != "participant" || q.Limit != "runs" || q.Over != 1 {
		t.Errorf("a second run for ann: %v", err)
	}
	// Two CPUs asked on a host whose running lanes may ask for one.
	spec, p = plan(t, m, `{"name": "big", "lanes": [{"workload": {"kind": "spin", "seconds": 1}, "limits": {"cpus": "1"}},
	  {"workload": {"kind": "spin", "seconds": 1}, "limits": {"cpus": "1"}}]}`)
	_, err = m.SubmitFrom(spec, p, "cat", "")
	if !errors.As(err, &q) || q.Scope != "host" || q.Limit != "cpus" || q.Over != 1 || !strings.Contains(err.Error(), "exceeded by 1 CPUs") {
		t.Errorf("a run over the host's CPU quota: %v", err)
	}

	v := waitDone(t, waiting, 30*time.Second)
	if v.State != runner.StateRefused || !strings.Contains(v.Error, "waited 2s in the queue") {
		t.Errorf("after the longest wait: %s, %q", v.State, v.Error)
	}
	if n := enginetest.Labelled(t, waiting.ID()); n != 0 {
		t.Errorf("the refused run has %d containers", n)
	}
	if err := m.Stop(long.ID()); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, long, 30*time.Second); v.State != runner.StateStopped {
		t.Errorf("stopped run: %s", v.State)
	}
}
