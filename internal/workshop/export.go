package workshop

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

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

// csvHeader is one row per sample per lane.
var csvHeader = []string{"run", "lane", "lane_name", "t_s", "dt_s", "cpu_cores", "mem_mib", "mem_limit_mib",
	"read_mib_per_s", "write_mib_per_s", "read_iops", "write_iops", "pids", "cfs_periods", "cfs_throttled_periods",
	"cfs_throttled_ms_per_s", "throughput", "workload_iops", "cpu_pressure_ms_per_s", "latency_p50_ms", "latency_p90_ms",
	"latency_p99_ms", "latency_max_ms", "failures", "memory_pressure_ms_per_s", "io_pressure_ms_per_s", "wait_ms_per_s",
	"host_foreign_cores", "host_steal_cores"}

// csvHostLane is the lane column of a row of the host's own load.
const csvHostLane = "host"

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
		if json.Unmarshal(raw, &msg) != nil {
			continue
		}
		if h := msg.Host; msg.Type == runner.KindHost && h != nil {
			row := make([]string, len(csvHeader))
			row[0], row[1], row[2], row[3], row[4] = v.ID, csvHostLane, csvHostLane, f(h.T), f(h.DT)
			row[27], row[28] = f(h.ForeignCores), f(h.StealCores)
			if err := cw.Write(row); err != nil {
				return err
			}
			continue
		}
		if msg.Type != runner.KindSamples {
			continue
		}
		for _, s := range msg.Samples {
			name := ""
			if s.Lane >= 0 && s.Lane < len(v.Lanes) {
				name = csvText(v.Lanes[s.Lane].Name)
			}
			row := []string{v.ID, strconv.Itoa(s.Lane), name, f(s.T), f(s.DT), f(s.CPU), f(s.MemMiB), f(s.MemLimitMiB),
				f(s.ReadMiBs), f(s.WriteMiBs), f(s.ReadIOPS), f(s.WriteIOPS), u(s.Pids), u(s.Periods), u(s.ThrottledPeriods),
				f(s.ThrottledMsPerS), f(s.Throughput), f(s.WorkIOPS), "", "", "", "", "", strconv.FormatInt(s.Failures, 10), "", "", "", "", ""}
			for col, p := range map[int]*float64{18: s.CPUPressure, 24: s.MemPressure, 25: s.IOPressure, 26: s.Wait} {
				if p != nil {
					row[col] = f(*p)
				}
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

// StoredExport is a run as a file, read from a store that no server need
// hold open: `limitlab export` reads the data directory with it.
func StoredExport(st *store.Store, id string) (Export, error) {
	a := &Archive{st: st, log: slog.Default(), cache: newStreamCache(0),
		live: func(string) (*runner.Run, bool) { return nil, false }}
	return a.Export(id)
}
