package runner

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/hub"
	"github.com/limitlab/limitlab/internal/store"
)

// LaneInterrupted is a lane that was pending or running when the server
// died.
const LaneInterrupted = "interrupted"

// save writes the run's row: its state, key result and view.
func (r *Run) save() {
	if r.store == nil {
		return
	}
	r.mu.Lock()
	v := r.viewLocked()
	r.mu.Unlock()
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	r.store.SaveRun(store.Run{ID: v.ID, Participant: r.participant, Lab: v.Lab, Name: v.Name, State: string(v.State),
		CreatedAt: v.CreatedAt, Summary: Summary(v), Imported: v.Imported, View: b})
}

// forget drops an ended run from memory once the store has all of it, so
// that what Get loads from then on is complete.
func (m *Manager) forget(r *Run) {
	if m.opts.Store == nil {
		return
	}
	if err := m.opts.Store.Sync(); err != nil {
		m.log.Error("store", slog.Any("err", err))
		return // keep it in memory: it is the only whole copy
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.runs, r.id)
	if i := slices.Index(m.order, r); i >= 0 {
		m.order = slices.Delete(m.order, i, i+1)
	}
}

// load makes an ended run from the store: its last view, and a closed hub
// holding its stream as it was published.
func (m *Manager) load(id string) (*Run, error) {
	if m.opts.Store == nil {
		return nil, ErrNoRun
	}
	row, err := m.opts.Store.Get(id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNoRun
	}
	if err != nil {
		return nil, err
	}
	msgs, err := m.opts.Store.Messages(id)
	if err != nil {
		return nil, err
	}
	r := &Run{id: id, participant: row.Participant, hub: hub.New(0), done: make(chan struct{}), cancel: func() {}}
	if err := json.Unmarshal(row.View, &r.view); err != nil {
		return nil, fmt.Errorf("run %s: stored view: %w", id, err)
	}
	for _, msg := range msgs {
		r.hub.Publish(msg)
	}
	r.hub.Close()
	close(r.done)
	return r, nil
}

func (m *Manager) listStored(lab string, limit int) ([]RunView, error) {
	rows, err := m.opts.Store.List(store.Filter{Lab: lab, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]RunView, 0, len(rows))
	for _, row := range rows {
		var v RunView
		if err := json.Unmarshal(row.View, &v); err != nil {
			m.log.Error("history: stored view", slog.String("run", row.ID), slog.Any("err", err))
			continue
		}
		out = append(out, v)
	}
	return out, nil
}

// recover marks the runs that were queued or running when the server died
// as interrupted, keeping what they recorded. Their containers are gone:
// the server reaps every labelled container before it starts a manager.
func (m *Manager) recover() {
	st := m.opts.Store
	if st == nil {
		return
	}
	if id, ok, err := st.Featured(); err == nil && ok {
		m.featured.set(id)
	}
	rows, err := st.List(store.Filter{States: []string{string(StateQueued), string(StateRunning)}, Limit: 1 << 20})
	if err != nil {
		m.log.Error("store: finding interrupted runs", slog.Any("err", err))
		return
	}
	for _, row := range rows {
		v, err := lastView(st, row)
		if err != nil {
			m.log.Error("store: interrupted run", slog.String("run", row.ID), slog.Any("err", err))
			continue
		}
		was := v.State
		v.State, v.QueuePosition = StateInterrupted, 0
		v.Error = fmt.Sprintf("interrupted: the server stopped while this run was %s; what it recorded until then is kept, "+
			"and its containers were removed when the server started again", was)
		for i := range v.Lanes {
			if l := &v.Lanes[i]; l.State == LanePending || l.State == LaneRunning {
				l.State = LaneInterrupted
			}
		}
		r := &Run{id: row.ID, participant: row.Participant, hub: hub.New(0), store: st, view: v}
		r.publishView()
		r.save()
		m.log.Warn("run interrupted by the server's end", slog.String("run", row.ID), slog.String("was", string(was)))
	}
	if err := st.Sync(); err != nil {
		m.log.Error("store", slog.Any("err", err))
	}
}

// lastView is the newest run view a run published, or its row's.
func lastView(st *store.Store, row store.Run) (RunView, error) {
	var v RunView
	msgs, err := st.Messages(row.ID)
	if err != nil {
		return v, err
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		var msg Message
		if json.Unmarshal(msgs[i], &msg) == nil && msg.Type == "run" && msg.Run != nil {
			return *msg.Run, nil
		}
	}
	return v, json.Unmarshal(row.View, &v)
}

// Summary is a run's key result in one line, for the history.
func Summary(v RunView) string {
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
		case l.WallSeconds > 0 && v.Mode == experiments.Sequential:
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

// featured is the run a presenter shows to everybody, and a stream of its
// changes for the /live page.
type featured struct {
	mu  sync.Mutex
	id  string
	hub *hub.Hub
}

func newFeatured() *featured { return &featured{hub: hub.New(0)} }

func (f *featured) set(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.id = id
	b, _ := json.Marshal(map[string]string{"type": "featured", "id": id})
	f.hub.Publish(b)
}

// Feature makes a run the featured one.
func (m *Manager) Feature(id string) error {
	if st := m.opts.Store; st != nil {
		// The run's row is written before this, in order, when it is
		// submitted.
		if err := st.Feature(id, time.Now()); errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w %q", ErrNoRun, id)
		} else if err != nil {
			return err
		}
	} else if _, ok := m.View(id); !ok {
		return fmt.Errorf("%w %q", ErrNoRun, id)
	}
	m.featured.set(id)
	return nil
}

// Featured is the featured run's id, if any.
func (m *Manager) Featured() (string, bool) {
	m.featured.mu.Lock()
	defer m.featured.mu.Unlock()
	return m.featured.id, m.featured.id != ""
}

// FeaturedFeed streams {"type":"featured","id":...} on each change; its
// history ends with the current one.
func (m *Manager) FeaturedFeed() *hub.Hub { return m.featured.hub }

// ExportFormat names Limit Lab's run export.
const ExportFormat = "limitlab-run"

// Export is a run as a file: its view (spec, limits applied, results,
// changes, events) and its live stream as published (run views and
// samples), which replays it with the same charts wherever it is
// imported.
type Export struct {
	Format     string            `json:"format"`
	Version    int               `json:"version"`
	ExportedAt time.Time         `json:"exported_at"`
	Run        RunView           `json:"run"`
	Stream     []json.RawMessage `json:"stream"`
}

// Export returns a run, ended or not, as a file.
func (m *Manager) Export(id string) (Export, error) {
	r, ok := m.Get(id)
	if !ok {
		return Export{}, fmt.Errorf("%w %q", ErrNoRun, id)
	}
	e := Export{Format: ExportFormat, Version: 1, ExportedAt: time.Now().UTC(), Run: r.View()}
	for _, msg := range r.hub.History() {
		e.Stream = append(e.Stream, msg)
	}
	return e, nil
}

// Import records an exported run under a new id and returns the id. The
// spec is checked for form, not against this host: a run measured
// elsewhere may ask for CPUs this host lacks.
func (m *Manager) Import(e Export) (string, error) {
	if m.opts.Store == nil {
		return "", errors.New("import: this server keeps no store")
	}
	if e.Format != ExportFormat || e.Version != 1 {
		return "", fmt.Errorf("import: not a Limit Lab run export (format %q, version %d; want %q, 1)", e.Format, e.Version, ExportFormat)
	}
	spec, err := json.Marshal(e.Run.Spec)
	if err != nil {
		return "", err
	}
	if _, errs := experiments.Parse(spec); errs != nil {
		return "", fmt.Errorf("import: the run's spec: %w", errs)
	}
	if len(e.Run.Lanes) == 0 || len(e.Run.Lanes) > experiments.MaxLanes {
		return "", fmt.Errorf("import: %d lanes, want 1 to %d", len(e.Run.Lanes), experiments.MaxLanes)
	}
	id := newID()
	fix := func(v *RunView) {
		v.ID, v.Imported, v.QueuePosition = id, true, 0
		if !v.State.Ended() {
			v.State, v.Error = StateInterrupted, "exported before it ended"
		}
	}
	v := e.Run
	fix(&v)
	stream := make([][]byte, 0, len(e.Stream))
	for i, raw := range e.Stream {
		var msg Message
		if err := json.Unmarshal(raw, &msg); err != nil {
			return "", fmt.Errorf("import: stream message %d: %w", i, err)
		}
		switch msg.Type {
		case "samples":
			for _, s := range msg.Samples {
				if s.Lane < 0 || s.Lane >= len(v.Lanes) {
					return "", fmt.Errorf("import: stream message %d: a sample of lane %d, but the run has %d lanes", i, s.Lane, len(v.Lanes))
				}
			}
			stream = append(stream, raw)
		case "run":
			if msg.Run == nil {
				return "", fmt.Errorf("import: stream message %d: a run message without a run", i)
			}
			// The stream's views carry the run's id: give them the new one.
			fix(msg.Run)
			b, err := json.Marshal(msg)
			if err != nil {
				return "", err
			}
			stream = append(stream, b)
		default:
			return "", fmt.Errorf("import: stream message %d: unknown type %q", i, msg.Type)
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	row := store.Run{ID: id, Lab: v.Lab, Name: v.Name, State: string(v.State), CreatedAt: v.CreatedAt,
		Summary: Summary(v), Imported: true, View: b}
	if err := m.opts.Store.Import(row, stream); err != nil {
		return "", fmt.Errorf("import: %w", err)
	}
	return id, nil
}

// csvHeader is one row per sample per lane.
var csvHeader = []string{"run", "lane", "lane_name", "t_s", "dt_s", "cpu_cores", "mem_bytes", "mem_limit_bytes",
	"read_bytes_per_s", "write_bytes_per_s", "read_iops", "write_iops", "pids", "cfs_periods", "cfs_throttled_periods",
	"cfs_throttled_ms", "throughput", "workload_iops", "cpu_pressure_ms", "latency_p50_ms", "latency_p90_ms",
	"latency_p99_ms", "latency_max_ms", "failures"}

// WriteCSV writes a run's samples, one row per sample per lane.
func (m *Manager) WriteCSV(w io.Writer, id string) error {
	r, ok := m.Get(id)
	if !ok {
		return fmt.Errorf("%w %q", ErrNoRun, id)
	}
	v := r.View()
	history := r.hub.History()
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	u := func(x uint64) string { return strconv.FormatUint(x, 10) }
	for _, raw := range history {
		var msg Message
		if json.Unmarshal(raw, &msg) != nil || msg.Type != "samples" {
			continue
		}
		for _, s := range msg.Samples {
			name := ""
			if s.Lane >= 0 && s.Lane < len(v.Lanes) {
				name = v.Lanes[s.Lane].Name
			}
			row := []string{v.ID, strconv.Itoa(s.Lane), name, f(s.T), f(s.DT), f(s.CPU), u(s.MemBytes), u(s.MemLimit),
				f(s.ReadBps), f(s.WriteBps), f(s.ReadIOPS), f(s.WriteIOPS), u(s.Pids), u(s.Periods), u(s.ThrottledPeriods),
				f(s.ThrottledMs), f(s.Throughput), f(s.IOPS), "", "", "", "", "", strconv.FormatInt(s.Failures, 10)}
			if s.PressureMs != nil {
				row[18] = f(*s.PressureMs)
			}
			if l := s.LatencyMs; l != nil {
				row[19], row[20], row[21], row[22] = f(l.P50), f(l.P90), f(l.P99), f(l.Max)
			}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
