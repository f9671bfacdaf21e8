package workshop

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/hub"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/store"
)

// recorder keeps what runs publish in the store, through its one batching
// writer: the runner never waits on the disk.
type recorder struct{ st *store.Store }

func (r recorder) Record(runID string, msg []byte) { r.st.Append(runID, msg) }

func (r recorder) Save(v runner.RunView, participant string) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	r.st.SaveRun(store.Run{ID: v.ID, Participant: participant, Lab: v.Lab, Name: v.Name, State: string(v.State),
		CreatedAt: v.CreatedAt, Summary: Summary(v), Imported: v.Imported, View: b})
}

// stored is an ended run loaded from the store: its last view, and a
// closed hub holding its stream as it was published.
type stored struct {
	view runner.RunView
	hub  *hub.Hub
}

// Archive is the history of runs: what the store keeps of ended runs, their
// export as a file and the import of one.
type Archive struct {
	st    *store.Store // nil: no history beyond memory
	log   *slog.Logger
	cache *streamCache
	// live finds a run still in the manager's memory; inMemory lists
	// them, oldest first.
	live     func(id string) (*runner.Run, bool)
	inMemory func() []*runner.Run
	// minFree is the free disk an import needs, as a run does; keep the
	// bound on the runs the store keeps.
	minFree int64
	keep    Retention
}

// Retention bounds the runs the store keeps: the newest Runs ended ones
// (none if 0), and none older than Age (none if 0). A live run and the
// featured one are always kept.
type Retention struct {
	Runs int
	Age  time.Duration
	// Imports bounds the imported runs kept, apart from the runs made
	// here: the newest Imports by when they were imported
	// (DefaultKeepImports if 0).
	Imports int
}

// DefaultKeepImports is how many imported runs the store keeps unless
// told.
const DefaultKeepImports = 200

// DefaultKeepRuns is how many ended runs the store keeps unless told: a
// workshop's week of runs in about a gigabyte of a laptop's disk (a run
// of two lanes for a minute is about 0.3 MB, a long twelve-lane one 40).
const DefaultKeepRuns = 2000

// prune removes the ended runs beyond the archive's bound, oldest first.
func (a *Archive) prune() {
	if a.st == nil {
		return
	}
	var before time.Time
	if a.keep.Age > 0 {
		before = time.Now().Add(-a.keep.Age)
	}
	n, err := a.st.Prune(a.keep.Runs, before, []string{string(runner.StateQueued), string(runner.StateRunning)})
	switch {
	case err != nil:
		a.log.Error("store: prune", slog.Any("err", err))
	case n > 0:
		a.log.Info("store: removed the oldest ended runs", slog.Int("runs", n), slog.Int("keep_runs", a.keep.Runs), slog.Duration("keep_age", a.keep.Age))
	}
}

// pruneImports removes the imported runs beyond their own bound, the
// first imported first.
func (a *Archive) pruneImports() {
	keep := a.keep.Imports
	if keep <= 0 {
		keep = DefaultKeepImports
	}
	n, err := a.st.PruneImported(keep)
	switch {
	case err != nil:
		a.log.Error("store: prune imports", slog.Any("err", err))
	case n > 0:
		a.log.Info("store: removed the first imported runs", slog.Int("runs", n), slog.Int("keep_imports", keep))
	}
}

// view is an ended run's view from the store.
func (a *Archive) view(id string) (runner.RunView, bool) {
	if a.st == nil {
		return runner.RunView{}, false
	}
	row, err := a.st.Get(id)
	if err != nil {
		return runner.RunView{}, false
	}
	var v runner.RunView
	if err := json.Unmarshal(row.View, &v); err != nil {
		a.log.Error("stored view", slog.String("run", id), slog.Any("err", err))
		return runner.RunView{}, false
	}
	return v, true
}

// load is an ended run, from the cache or the store.
func (a *Archive) load(id string) (stored, error) {
	if a.st == nil {
		return stored{}, ErrNoRun
	}
	return a.cache.get(id, a.read)
}

// read reads an ended run from the store.
func (a *Archive) read(id string) (stored, error) {
	row, err := a.st.Get(id)
	if errors.Is(err, store.ErrNotFound) {
		return stored{}, ErrNoRun
	}
	if err != nil {
		return stored{}, err
	}
	msgs, err := a.st.Messages(id)
	if err != nil {
		return stored{}, err
	}
	s := stored{hub: hub.New(0)}
	if err := json.Unmarshal(row.View, &s.view); err != nil {
		return stored{}, fmt.Errorf("run %s: stored view: %w", id, err)
	}
	for _, msg := range msgs {
		s.hub.Publish(current(msg))
	}
	s.hub.Close()
	return s, nil
}

// source is a run's view and a walk over everything it published so
// far: from memory for a live run or one in the cache, otherwise from the
// store a page at a time. The walk's messages are in today's shape.
func (a *Archive) source(id string) (runner.RunView, func(func([]byte) error) error, error) {
	if r, ok := a.live(id); ok {
		return r.View(), eachOf(r.Hub().History()), nil
	}
	if s, ok := a.cache.peek(id); ok {
		return s.view, eachOf(s.hub.History()), nil
	}
	v, ok := a.view(id)
	if !ok {
		return runner.RunView{}, nil, fmt.Errorf("%w %q", ErrNoRun, id)
	}
	return v, func(f func([]byte) error) error {
		return a.st.EachMessage(id, func(b []byte) error { return f(current(b)) })
	}, nil
}

// eachOf walks messages held in memory.
func eachOf(msgs [][]byte) func(func([]byte) error) error {
	return func(f func([]byte) error) error {
		for _, m := range msgs {
			if err := f(m); err != nil {
				return err
			}
		}
		return nil
	}
}

// list is the stored history, newest first.
func (a *Archive) list(lab string, limit int) ([]runner.RunView, error) {
	rows, err := a.st.List(store.Filter{Lab: lab, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]runner.RunView, 0, len(rows))
	for _, row := range rows {
		var v runner.RunView
		if err := json.Unmarshal(row.View, &v); err != nil {
			a.log.Error("history: stored view", slog.String("run", row.ID), slog.Any("err", err))
			continue
		}
		out = append(out, v)
	}
	return out, nil
}

// recover marks the runs that were queued or running when the server died
// as interrupted, keeping what they recorded. Their containers are gone:
// the server reaps every labelled container before it starts a manager.
func (a *Archive) recover(featured *Featured) {
	st := a.st
	if st == nil {
		return
	}
	if id, ok, err := st.Featured(); err == nil && ok {
		featured.set(id)
	}
	rows, err := st.List(store.Filter{States: []string{string(runner.StateQueued), string(runner.StateRunning)}, Limit: 1 << 20})
	if err != nil {
		a.log.Error("store: finding interrupted runs", slog.Any("err", err))
		return
	}
	rec := recorder{st}
	for _, row := range rows {
		v, err := lastView(st, row)
		if err != nil {
			a.log.Error("store: interrupted run", slog.String("run", row.ID), slog.Any("err", err))
			continue
		}
		was := v.State
		v.State, v.Ended, v.QueuePosition = runner.StateInterrupted, true, 0
		v.Error = fmt.Sprintf("interrupted: the server stopped while this run was %s; what it recorded until then is kept, "+
			"and its containers were removed when the server started again", was)
		for i := range v.Lanes {
			l := &v.Lanes[i]
			l.State, _ = l.State.To(runner.LaneInterrupted)
		}
		if b, err := json.Marshal(runner.Message{Type: runner.KindRun, Run: &v}); err == nil {
			rec.Record(v.ID, b)
		}
		rec.Save(v, row.Participant)
		a.log.Warn("run interrupted by the server's end", slog.String("run", row.ID), slog.String("was", string(was)))
	}
	if err := st.Sync(); err != nil {
		a.log.Error("store", slog.Any("err", err))
	}
}

// lastView is the newest run view a run published, or its row's.
func lastView(st *store.Store, row store.Run) (runner.RunView, error) {
	var v runner.RunView
	msgs, err := st.Messages(row.ID)
	if err != nil {
		return v, err
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		var msg runner.Message
		if json.Unmarshal(msgs[i], &msg) == nil && msg.Type == runner.KindRun && msg.Run != nil {
			return *msg.Run, nil
		}
	}
	return v, json.Unmarshal(row.View, &v)
}

// Summary is a run's key result in one line, for the history.
func Summary(v runner.RunView) string {
	var parts []string
	if vd := v.Verdict; vd != nil && vd.Judged {
		if vd.Pass {
			parts = append(parts, "as predicted")
		} else {
			parts = append(parts, "off the prediction")
		}
	}
	for i, l := range v.Lanes {
		if i == 4 {
			parts = append(parts, fmt.Sprintf("… %d more lanes", len(v.Lanes)-4))
			break
		}
		var fig string
		switch {
		case l.LatencyMs != nil:
			fig = fmt.Sprintf("p99 %.0f ms at %.0f req/s", l.LatencyMs.P99, l.RPS)
		case l.IOPS > 0:
			fig = fmt.Sprintf("%.0f IOPS", l.IOPS)
		case l.WallSeconds > 0 && v.Mode == specs.Sequential:
			fig = fmt.Sprintf("%.1f s", l.WallSeconds)
		case l.MeasuredCores > 0:
			fig = fmt.Sprintf("%.2f cores", l.MeasuredCores)
		default:
			continue
		}
		parts = append(parts, l.Name+": "+fig)
	}
	return strings.Join(parts, "; ")
}

// View is a run as it is now, or as it ended, without its stream.
func (a *Archive) View(id string) (runner.RunView, bool) {
	if r, ok := a.live(id); ok {
		return r.View(), true
	}
	return a.view(id)
}

// Feed is the live fan-out of a run; an ended run's is closed and holds
// its whole stream.
func (a *Archive) Feed(id string) (*hub.Hub, bool) {
	if r, ok := a.live(id); ok {
		return r.Hub(), true
	}
	s, err := a.load(id)
	if err != nil {
		return nil, false
	}
	return s.hub, true
}

// MaxList bounds the runs List returns.
const MaxList = 500

// List returns at most limit runs (MaxList if limit is out of range),
// newest first; lab, if set, keeps that lab's.
func (a *Archive) List(lab string, limit int) []runner.RunView {
	if limit <= 0 || limit > MaxList {
		limit = MaxList
	}
	live := a.inMemory()
	byID := map[string]*runner.Run{}
	for _, r := range live {
		byID[r.ID()] = r
	}
	var out []runner.RunView
	if a.st != nil {
		stored, err := a.list(lab, limit)
		if err != nil {
			a.log.Error("history", slog.Any("err", err))
		}
		for _, v := range stored {
			if r, ok := byID[v.ID]; ok {
				v = r.View()
				delete(byID, v.ID)
			}
			out = append(out, v)
		}
	}
	// Runs in memory that the store does not list (no store, or not yet
	// written): newest first, before the stored ones.
	var fresh []runner.RunView
	for i := len(live) - 1; i >= 0; i-- {
		r := live[i]
		if _, ok := byID[r.ID()]; ok && (lab == "" || r.Plan().Lab == lab) {
			fresh = append(fresh, r.View())
		}
	}
	out = append(append([]runner.RunView{}, fresh...), out...) // [] on the wire, never null
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// current is a recorded message as this server would publish it now: the
// samples of a run recorded before display units are read (their
// UnmarshalJSON converts them) and written anew; any other message is
// kept as it was.
func current(msg []byte) []byte {
	if !engine.IsLegacySamples(msg) {
		return msg
	}
	var m runner.Message
	if json.Unmarshal(msg, &m) != nil {
		return msg
	}
	b, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return b
}
