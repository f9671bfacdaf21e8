package store

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

func open(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRunsAndMessagesSurviveReopening(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for i, lab := range []string{"shares", "quota", "shares"} {
		s.SaveRun(Run{ID: fmt.Sprint("r", i), Participant: "p", Lab: lab, Name: "run", State: "running",
			CreatedAt: base.Add(time.Duration(i) * time.Minute), View: []byte(`{}`)})
	}
	for i := range 100 {
		s.Append("r1", []byte(fmt.Sprint(i)))
	}
	s.SaveRun(Run{ID: "r1", Lab: "quota", Name: "run", State: "done", Summary: "2.00×", CreatedAt: base, View: []byte(`{"state":"done"}`)})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, dir) // migrations already applied: nothing to do
	defer s.Close()
	if v, err := s.Version(); err != nil || v != 1 {
		t.Fatalf("schema version %d, %v; want 1", v, err)
	}
	r, err := s.Get("r1")
	if err != nil {
		t.Fatal(err)
	}
	if r.State != "done" || r.Summary != "2.00×" || string(r.View) != `{"state":"done"}` || r.Participant != "p" ||
		!r.CreatedAt.Equal(base.Add(time.Minute)) {
		t.Errorf("run after reopening: %+v; the update must change state, summary and view only", r)
	}
	msgs, err := s.Messages("r1")
	if err != nil || len(msgs) != 100 {
		t.Fatalf("%d messages, %v; want 100", len(msgs), err)
	}
	for i, m := range msgs {
		if string(m) != fmt.Sprint(i) {
			t.Fatalf("message %d is %q: out of order", i, m)
		}
	}
	all, _ := s.List(Filter{})
	if len(all) != 3 || all[0].ID != "r2" || all[2].ID != "r0" {
		t.Errorf("list: %v, want newest first", ids(all))
	}
	shares, _ := s.List(Filter{Lab: "shares"})
	if len(shares) != 2 || shares[0].ID != "r2" || shares[1].ID != "r0" {
		t.Errorf("lab filter: %v", ids(shares))
	}
	running, _ := s.List(Filter{States: []string{"running", "queued"}})
	if len(running) != 2 {
		t.Errorf("state filter: %v", ids(running))
	}
	if _, err := s.Get("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown run: %v", err)
	}
}

func TestImportIsAllOrNothing(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	r := Run{ID: "imp", Name: "from home", State: "done", CreatedAt: time.Now(), Imported: true, View: []byte(`{}`)}
	if err := s.Import(r, [][]byte{[]byte("a"), []byte("b")}); err != nil {
		t.Fatal(err)
	}
	// The same id again: the row updates, then a nil message body breaks
	// the NOT NULL constraint, and nothing of the second import stays.
	r.Name = "changed"
	if err := s.Import(r, [][]byte{[]byte("c"), nil}); err == nil {
		t.Fatal("import with a nil message succeeded")
	}
	got, _ := s.Get("imp")
	msgs, _ := s.Messages("imp")
	if got.Name != "from home" || len(msgs) != 2 || !bytes.Equal(msgs[1], []byte("b")) || !got.Imported {
		t.Errorf("after a failed import: %+v, %q", got, msgs)
	}
}

func TestFeaturedIsTheLastMarked(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	if _, ok, err := s.Featured(); ok || err != nil {
		t.Fatalf("featured on an empty store: %v %v", ok, err)
	}
	now := time.Now()
	for _, id := range []string{"a", "b"} {
		s.SaveRun(Run{ID: id, Name: id, State: "done", CreatedAt: now, View: []byte(`{}`)})
	}
	if err := s.Feature("a", now); err != nil {
		t.Fatal(err)
	}
	if err := s.Feature("b", now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if id, ok, _ := s.Featured(); !ok || id != "b" {
		t.Errorf("featured %q, want b", id)
	}
	if err := s.Feature("zzz", now); !errors.Is(err, ErrNotFound) {
		t.Errorf("featuring an unknown run: %v", err)
	}
}

func ids(rs []Run) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

// A burst of readers shares a bounded pool: a connection each would keep a
// page cache each, outside Go's heap, for as long as the server runs.
func TestReadersShareABoundedPool(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	for i := range 20 {
		s.SaveRun(Run{ID: fmt.Sprint("r", i), Name: "run", State: "done", CreatedAt: time.Now(), View: []byte(`{}`)})
		for j := range 50 {
			s.Append(fmt.Sprint("r", i), []byte(fmt.Sprint(j)))
		}
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	most := 0
	var mu sync.Mutex
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Messages(fmt.Sprint("r", i%20)); err != nil {
				t.Error(err)
			}
			if _, err := s.List(Filter{Limit: 50}); err != nil {
				t.Error(err)
			}
			mu.Lock()
			most = max(most, s.db.Stats().OpenConnections)
			mu.Unlock()
		}()
	}
	wg.Wait()
	st := s.db.Stats()
	t.Logf("100 readers: at most %d connections open, %d idle after", most, st.Idle)
	if most > MaxConns || st.OpenConnections > MaxConns {
		t.Errorf("%d connections open at most (%d now), want at most %d", most, st.OpenConnections, MaxConns)
	}
	if st.Idle > MaxIdleConns {
		t.Errorf("%d idle connections kept, want at most %d", st.Idle, MaxIdleConns)
	}
}

// TestPruneKeepsTheNewestEndedRuns: past the bound, ended runs go oldest
// first with their messages; a live run and the featured one stay however
// old they are.
func TestPruneKeepsTheNewestEndedRuns(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	live := []string{"queued", "running"}
	for i := range 10 {
		state := "done"
		switch i {
		case 0:
			state = "running"
		case 1:
			state = "queued"
		}
		id := fmt.Sprint("r", i)
		s.SaveRun(Run{ID: id, Name: "run", State: state, CreatedAt: base.Add(time.Duration(i) * time.Hour), View: []byte(`{}`)})
		s.Append(id, []byte("sample"))
	}
	if err := s.Feature("r2", base); err != nil {
		t.Fatal(err)
	}
	n, err := s.Prune(3, time.Time{}, live)
	if err != nil || n != 4 {
		t.Fatalf("pruned %d, %v; want the 4 ended runs r3-r6 beyond the newest 3", n, err)
	}
	ids := func() []string {
		var out []string
		rows, _ := s.List(Filter{Limit: 100})
		for _, r := range rows {
			out = append(out, r.ID)
		}
		return out
	}
	if got := fmt.Sprint(ids()); got != "[r9 r8 r7 r2 r1 r0]" {
		t.Errorf("kept %s; want the newest three ended, the featured r2 and the live r1, r0", got)
	}
	if msgs, _ := s.Messages("r4"); len(msgs) != 0 {
		t.Errorf("a pruned run's %d messages stayed", len(msgs))
	}
	// By age: runs created before the time given go too.
	if n, err := s.Prune(0, base.Add(8*time.Hour+time.Minute), live); err != nil || n != 2 {
		t.Errorf("pruned %d by age, %v; want r7 and r8", n, err)
	}
	if got := fmt.Sprint(ids()); got != "[r9 r2 r1 r0]" {
		t.Errorf("kept %s after pruning by age", got)
	}
}

// Imported runs are bounded apart, by the order they were imported: any
// number of them, claiming any time, pushes no run made here out, and
// the first imported go first whatever times their files give.
func TestImportsArePrunedApart(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for i := range 3 {
		s.SaveRun(Run{ID: fmt.Sprint("own", i), Name: "run", State: "done", CreatedAt: base.Add(time.Duration(i) * time.Hour), View: []byte(`{}`)})
	}
	// Imports claiming times far in the past and in the future, in that
	// order.
	for i, at := range []time.Time{base.AddDate(-5, 0, 0), base.AddDate(5, 0, 0), base.AddDate(-10, 0, 0), base} {
		if err := s.Import(Run{ID: fmt.Sprint("imp", i), Name: "x", State: "done", CreatedAt: at, Imported: true, View: []byte(`{}`)}, [][]byte{[]byte("m")}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.Prune(3, time.Time{}, nil); err != nil || n != 0 {
		t.Errorf("pruning to 3 runs made here removed %d, %v; want none: imports do not count", n, err)
	}
	if n, err := s.PruneImported(2); err != nil || n != 2 {
		t.Fatalf("pruned %d imports, %v; want 2", n, err)
	}
	rows, _ := s.List(Filter{Limit: 100})
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	if got := fmt.Sprint(ids); got != "[imp2 imp3 own0 own1 own2]" {
		t.Errorf("kept %s; want every run made here and the last two imported", got)
	}
}

// The workload image a data directory records: a new one is recorded
// with the one before it, which every engine of a pool is told until the
// binary changes again.
func TestSwapImage(t *testing.T) {
	dir := t.TempDir()
	for i, tc := range []struct{ current, want string }{
		{"limitlab-workload:a", ""},
		{"limitlab-workload:a", ""},
		{"limitlab-workload:b", "limitlab-workload:a"},
		{"limitlab-workload:b", "limitlab-workload:a"},
		{"limitlab-workload:c", "limitlab-workload:b"},
	} {
		if got, err := SwapImage(dir, tc.current); err != nil || got != tc.want {
			t.Errorf("step %d: SwapImage(%s) = %q, %v; want %q", i, tc.current, got, err, tc.want)
		}
	}
}
