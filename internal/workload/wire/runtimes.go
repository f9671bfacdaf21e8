package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
)

// RuntimeReport is what one language runtime in a lane believes it has,
// as its probe printed it (images/runtimes): the runtime, its version,
// named figures and, for the JVM, the collector it chose. Error, instead,
// says why its probe gave no report.
type RuntimeReport struct {
	Runtime string          `json:"runtime"`
	Version string          `json:"version,omitempty"`
	Figures []RuntimeFigure `json:"figures,omitempty"`
	GC      string          `json:"gc,omitempty"`
	Error   string          `json:"error,omitempty"`
}

// RuntimeFigure is one figure of a runtime's report.
type RuntimeFigure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// RuntimeRound is every runtime's report at one time, AtS seconds into
// the workload.
type RuntimeRound struct {
	AtS     float64         `json:"at_s"`
	Reports []RuntimeReport `json:"reports"`
}

// Figure is the report's figure of that name, and whether it has one.
func (r RuntimeReport) Figure(name string) (float64, bool) {
	for _, f := range r.Figures {
		if f.Name == name {
			return f.Value, true
		}
	}
	return 0, false
}

// The runtimes the runtimes workload asks, and the figures each may
// report: nothing else is accepted from a probe.
var RuntimeFigures = map[string][]string{
	"go":     {"gomaxprocs", "num_cpu"},
	"java":   {"available_processors", "fork_join_parallelism", "gc_threads", "max_heap_bytes"},
	"node":   {"available_parallelism", "cpus_length", "heap_limit_bytes"},
	"python": {"cpu_count", "sched_getaffinity", "process_cpu_count"},
}

// Runtimes is the order the runtimes are asked and shown in.
var Runtimes = []string{"go", "java", "node", "python"}

// ShownFigures are the figures of runtime a run shows and judges: its
// reported figures, and the JVM's collector ("gc", its report's GC).
func ShownFigures(runtime string) []string {
	if runtime == "java" {
		return append([]string{"gc"}, RuntimeFigures[runtime]...)
	}
	return RuntimeFigures[runtime]
}

// The JVM's collectors a report may name.
var runtimeGCs = []string{"", "G1", "Serial", "Parallel", "other"}

// MaxRuntimeReport bounds a probe's output, and MaxRuntimeError the
// reason a report gives for having none.
const (
	MaxRuntimeReport = 4096
	MaxRuntimeError  = 200
	maxRuntimeRounds = 2
)

var runtimeVersion = regexp.MustCompile(`^[0-9A-Za-z.+_-]{1,48}$`)

// ParseRuntimeReport reads one probe's output, which must be a single
// report of runtime want, and checks it (Check).
func ParseRuntimeReport(out []byte, want string) (RuntimeReport, error) {
	if len(out) > MaxRuntimeReport {
		return RuntimeReport{}, fmt.Errorf("%s's probe printed over %d bytes", want, MaxRuntimeReport)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	var r RuntimeReport
	if err := dec.Decode(&r); err != nil {
		return RuntimeReport{}, fmt.Errorf("%s's probe printed no report: %w", want, err)
	}
	if dec.More() {
		return RuntimeReport{}, fmt.Errorf("%s's probe printed more than one report", want)
	}
	if r.Runtime != want {
		return RuntimeReport{}, fmt.Errorf("%s's probe reported runtime %q", want, r.Runtime)
	}
	if r.Error != "" {
		return RuntimeReport{}, fmt.Errorf("%s's probe sent an error field", want)
	}
	return r, r.Check()
}

// Check says whether a report holds only what a probe may send: a known
// runtime, a plain version, that runtime's figures once each as finite
// numbers, a known collector, and a short error of plain text. The server
// checks every report it reads, as the workload does: what a container
// printed reaches no page unchecked.
func (r RuntimeReport) Check() error {
	names, ok := RuntimeFigures[r.Runtime]
	if !ok {
		return fmt.Errorf("unknown runtime %q", r.Runtime)
	}
	if r.Error != "" {
		if len(r.Error) > MaxRuntimeError || !plainText(r.Error) {
			return errors.New("a report's error is over 200 bytes or not plain text")
		}
		if r.Version != "" || len(r.Figures) > 0 || r.GC != "" {
			return errors.New("a report with an error has no figures")
		}
		return nil
	}
	if !runtimeVersion.MatchString(r.Version) {
		return fmt.Errorf("%s: version %q is not a plain version", r.Runtime, r.Version)
	}
	if !slices.Contains(runtimeGCs, r.GC) || (r.GC != "" && r.Runtime != "java") {
		return fmt.Errorf("%s: unknown collector %q", r.Runtime, r.GC)
	}
	seen := map[string]bool{}
	for _, f := range r.Figures {
		if !slices.Contains(names, f.Name) || seen[f.Name] {
			return fmt.Errorf("%s: unknown or repeated figure %q", r.Runtime, f.Name)
		}
		seen[f.Name] = true
		if math.IsNaN(f.Value) || math.Abs(f.Value) > 1<<53 {
			return fmt.Errorf("%s: figure %s is not a number in range", r.Runtime, f.Name)
		}
	}
	return nil
}

// CheckRuntimeRounds checks rounds as the server reads them from a
// summary: at most two (the first and the last), each with known
// runtimes once each, every report checked.
func CheckRuntimeRounds(rounds []RuntimeRound) error {
	if len(rounds) > maxRuntimeRounds {
		return fmt.Errorf("%d rounds of runtime reports, at most %d", len(rounds), maxRuntimeRounds)
	}
	for _, round := range rounds {
		if math.IsNaN(round.AtS) || round.AtS < 0 || round.AtS > 1e6 {
			return errors.New("a round of runtime reports at no time")
		}
		seen := map[string]bool{}
		for _, r := range round.Reports {
			if err := r.Check(); err != nil {
				return err
			}
			if seen[r.Runtime] {
				return fmt.Errorf("runtime %s reported twice in a round", r.Runtime)
			}
			seen[r.Runtime] = true
		}
	}
	return nil
}

// plainText: printable ASCII only, so that nothing a probe wrote can
// pose as markup or a control sequence anywhere it is shown.
func plainText(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// RuntimeError is the report of a runtime whose probe failed, its reason
// cut to plain text of at most MaxRuntimeError bytes.
func RuntimeError(runtime string, err error) RuntimeReport {
	b := []byte(err.Error())
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	if len(b) > MaxRuntimeError {
		b = b[:MaxRuntimeError]
	}
	return RuntimeReport{Runtime: runtime, Error: string(b)}
}
