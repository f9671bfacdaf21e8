package workshop

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/store"
)

// InvalidImportError is an import refused for what the file holds, as
// opposed to a failure to store it.
type InvalidImportError struct{ err error }

func (e *InvalidImportError) Error() string { return e.err.Error() }
func (e *InvalidImportError) Unwrap() error { return e.err }

func invalid(format string, args ...any) error {
	return &InvalidImportError{fmt.Errorf(format, args...)}
}

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
	Run        runner.RunView    `json:"run"`
	Stream     []json.RawMessage `json:"stream"`
}

// Export returns a run, ended or not, as a file.
func (a *Archive) Export(id string) (Export, error) {
	v, stream, err := a.viewAndStream(id)
	if err != nil {
		return Export{}, err
	}
	e := Export{Format: ExportFormat, Version: 1, ExportedAt: time.Now().UTC(), Run: v}
	for _, msg := range stream {
		e.Stream = append(e.Stream, msg)
	}
	return e, nil
}

// Import records an exported run under a new id and returns the id. The
// spec is checked for form, not against this host: a run measured
// elsewhere may ask for CPUs this host lacks.
func (a *Archive) Import(e Export) (string, error) {
	if a.st == nil {
		return "", errors.New("import: this server keeps no store")
	}
	if e.Format != ExportFormat || e.Version != 1 {
		return "", invalid("import: not a Limit Lab run export (format %q, version %d; want %q, 1)", e.Format, e.Version, ExportFormat)
	}
	spec, err := json.Marshal(e.Run.Spec)
	if err != nil {
		return "", err
	}
	if _, errs := experiments.Parse(spec); errs != nil {
		return "", invalid("import: the run's spec: %w", errs)
	}
	if len(e.Run.Lanes) == 0 || len(e.Run.Lanes) > experiments.MaxLanes {
		return "", invalid("import: %d lanes, want 1 to %d", len(e.Run.Lanes), experiments.MaxLanes)
	}
	id := newID()
	fix := func(v *runner.RunView) {
		v.ID, v.Imported, v.QueuePosition = id, true, 0
		if !v.State.Ended() {
			v.State, v.Error = runner.StateInterrupted, "exported before it ended"
		}
		v.Ended = true
	}
	v := e.Run
	fix(&v)
	stream := make([][]byte, 0, len(e.Stream))
	for i, raw := range e.Stream {
		var msg runner.Message
		if err := json.Unmarshal(raw, &msg); err != nil {
			return "", invalid("import: stream message %d: %w", i, err)
		}
		switch msg.Type {
		case runner.KindSamples:
			for _, s := range msg.Samples {
				if s.Lane < 0 || s.Lane >= len(v.Lanes) {
					return "", invalid("import: stream message %d: a sample of lane %d, but the run has %d lanes", i, s.Lane, len(v.Lanes))
				}
			}
			stream = append(stream, raw)
		case runner.KindRun:
			if msg.Run == nil {
				return "", invalid("import: stream message %d: a run message without a run", i)
			}
			// The stream's views carry the run's id: give them the new one.
			fix(msg.Run)
			b, err := json.Marshal(msg)
			if err != nil {
				return "", err
			}
			stream = append(stream, b)
		default:
			return "", invalid("import: stream message %d: unknown type %q", i, msg.Type)
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	row := store.Run{ID: id, Lab: v.Lab, Name: v.Name, State: string(v.State), CreatedAt: v.CreatedAt,
		Summary: Summary(v), Imported: true, View: b}
	if err := a.st.Import(row, stream); err != nil {
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
func (a *Archive) WriteCSV(w io.Writer, id string) error {
	v, history, err := a.viewAndStream(id)
	if err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	u := func(x uint64) string { return strconv.FormatUint(x, 10) }
	for _, raw := range history {
		var msg runner.Message
		if json.Unmarshal(raw, &msg) != nil || msg.Type != runner.KindSamples {
			continue
		}
		for _, s := range msg.Samples {
			name := ""
			if s.Lane >= 0 && s.Lane < len(v.Lanes) {
				name = csvText(v.Lanes[s.Lane].Name)
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

// csvText keeps a cell of the user's text from being read as a formula by
// a spreadsheet (CSV injection): one starting with = + - @ or a control
// character gets a leading apostrophe, as OWASP advises.
func csvText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
