package workshop

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
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

// Export returns a run, ended or not, as a file, whole in memory: for
// the published page, which needs all of it at once. Serving a file to a
// client streams it instead (WriteExport).
func (a *Archive) Export(id string) (Export, error) {
	v, each, err := a.source(id)
	if err != nil {
		return Export{}, err
	}
	e := Export{Format: ExportFormat, Version: 1, ExportedAt: time.Now().UTC(), Run: v}
	err = each(func(msg []byte) error {
		e.Stream = append(e.Stream, slices.Clone(msg))
		return nil
	})
	return e, err
}

// exportHead is an export's fields before its run and its stream.
type exportHead struct {
	Format     string    `json:"format"`
	Version    int       `json:"version"`
	ExportedAt time.Time `json:"exported_at"`
}

// WriteExport writes run id as an export file (the JSON of Export, one
// stream message a line) as it reads it: an ended run a page of messages
// at a time from the store, so that what a request holds is a page and
// w's buffer, whatever the run's size and however slowly w is read. The
// run is looked up before anything is written: an unknown id writes
// nothing.
func (a *Archive) WriteExport(w io.Writer, id string) error {
	v, each, err := a.source(id)
	if err != nil {
		return err
	}
	head, err := json.Marshal(exportHead{Format: ExportFormat, Version: 1, ExportedAt: time.Now().UTC()})
	if err != nil {
		return err
	}
	run, err := json.Marshal(v)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, exportBuffer)
	bw.Write(head[:len(head)-1])
	bw.WriteString(`,"run":`)
	bw.Write(run)
	bw.WriteString(`,"stream":[`)
	sep := "\n"
	err = each(func(msg []byte) error {
		bw.WriteString(sep)
		sep = ",\n"
		_, err := bw.Write(msg)
		return err
	})
	if err != nil {
		return err
	}
	bw.WriteString("\n]}\n")
	return bw.Flush()
}

// exportBuffer is what one export holds of its file at a time.
const exportBuffer = 32 << 10

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
	v, each, err := a.source(id)
	if err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	err = each(func(raw []byte) error { return writeCSVRows(cw, v, raw) })
	if err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// writeCSVRows writes the rows of one message of a run's stream.
func writeCSVRows(cw *csv.Writer, v runner.RunView, raw []byte) error {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	u := func(x uint64) string { return strconv.FormatUint(x, 10) }
	var msg runner.Message
	if json.Unmarshal(raw, &msg) != nil {
		return nil
	}
	if h := msg.Host; msg.Type == runner.KindHost && h != nil {
		row := make([]string, len(csvHeader))
		row[0], row[1], row[2], row[3], row[4] = v.ID, csvHostLane, csvHostLane, f(h.T), f(h.DT)
		row[27], row[28] = f(h.ForeignCores), f(h.StealCores)
		return cw.Write(row)
	}
	if msg.Type != runner.KindSamples {
		return nil
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
	return nil
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
