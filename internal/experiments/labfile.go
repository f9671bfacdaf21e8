package experiments

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// MaxLabFile bounds a lab file's size: a lab is a few kilobytes.
const MaxLabFile = 256 << 10

var labID = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,47}$`)

// topicName is a lab file's topic: a built-in one (Topics) or one of the
// facilitator's own, listed after them.
var topicName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// ParseLabFile reads one lab file and checks all of it: the fields a lab
// has, its spec as a run would be checked (host aside: whether this host
// can show it is asked of the lab later), its verdict and its steps. The
// first problem comes back with the file, the field and its line.
func ParseLabFile(file string, b []byte) (Lab, *BrokenLab) {
	fail := func(field string, path []string, format string, args ...any) (Lab, *BrokenLab) {
		return Lab{}, &BrokenLab{File: file, Line: lineOf(b, path), Field: field, Message: fmt.Sprintf(format, args...)}
	}
	if len(b) > MaxLabFile {
		return fail("", nil, "%d bytes: a lab file has at most %d", len(b), MaxLabFile)
	}
	var l Lab
	if err := specs.StrictDecode(b, &l); err != nil {
		return Lab{}, &BrokenLab{File: file, Line: decodeLine(b, err), Field: specs.JSONField(err, ""), Message: specs.JSONMessage(err)}
	}
	l.File = file
	switch {
	case !labID.MatchString(l.ID):
		return fail("id", []string{"id"}, "want 1 to 48 lowercase letters, digits and dashes, got %q", l.ID)
	case strings.TrimSpace(l.Title) == "" || len(l.Title) > 100:
		return fail("title", []string{"title"}, "want a title of 1 to 100 characters")
	case len(l.Question)+len(l.Before)+len(l.After) > 8000:
		return fail("question", []string{"question"}, "question, before and after have at most 8000 characters in all")
	case len(l.Seed) > 16:
		return fail("seed", []string{"seed"}, "at most 16 characters")
	case l.RequiresCPUs < 0 || l.RequiresCPUs > 1024:
		return fail("requires_cpus", []string{"requires_cpus"}, "want 0 to 1024, got %d", l.RequiresCPUs)
	case l.RequiresCPUManager != "" && l.RequiresCPUManager != specs.CPUManagerStatic:
		return fail("requires_cpu_manager", []string{"requires_cpu_manager"}, "want %q or nothing, got %q", specs.CPUManagerStatic, l.RequiresCPUManager)
	case !topicName.MatchString(l.Topic):
		return fail("topic", []string{"topic"}, "want a topic of 1 to 32 lowercase letters, digits and dashes (the built-in ones are %s), got %q",
			strings.Join(Topics, ", "), l.Topic)
	}
	// The runtimes' rules carry their own slack.
	if v := l.Verdict; v != nil && (!slices.Contains(Metrics, v.Metric) || (v.Tolerance <= 0) != (v.Metric == specs.MetricRuntimes)) {
		return fail("verdict", []string{"verdict"}, "want a metric of %v and a positive tolerance (none for %s), got %q and %g", Metrics, specs.MetricRuntimes, v.Metric, v.Tolerance)
	}
	if v := l.Verdict; v != nil && len(v.ToleranceWhy) > 500 {
		return fail("verdict.tolerance_why", []string{"verdict", "tolerance_why"}, "at most 500 characters")
	}
	if len(l.Spec) == 0 {
		return fail("spec", nil, "a lab needs a spec: its lanes")
	}
	spec, errs := specs.ParseCustom(l.Spec)
	if errs == nil {
		_, errs = Validate(spec, specs.Host{DataRootDevice: "/dev/auto"})
	}
	if errs != nil {
		return fail(specField(errs[0]), specPath(errs[0]), "%s", errs[0].Message)
	}
	if err := checkSteps(l.Steps, spec); err != nil {
		return fail(err.Field, err.path, "%s", err.Message)
	}
	if l.Find != nil {
		fs, errs := l.FindOf()
		if errs == nil {
			_, errs = fs.Check()
		}
		if errs != nil {
			return fail("find."+errs[0].Field, []string{"find"}, "%s", errs[0].Message)
		}
	}
	return l, nil
}

// Metrics are the verdicts a lab may ask for.
var Metrics = []string{specs.MetricWallTime, specs.MetricCPU, specs.MetricIOLimit, specs.MetricPhaseRecovery, specs.MetricIOShare, specs.MetricThrottling, specs.MetricBurst, specs.MetricRuntimes}

// specField names a spec's problem as a lab file's field.
func specField(e specs.FieldError) string {
	if e.Lane < 0 {
		return "spec." + e.Field
	}
	return fmt.Sprintf("spec.lanes[%d].%s", e.Lane, e.Field)
}

// specPath is where in a lab file a spec's problem is; a limit's field
// lies under the lane's limits.
func specPath(e specs.FieldError) []string {
	if e.Lane < 0 {
		return append([]string{"spec"}, strings.Split(e.Field, ".")...)
	}
	return append([]string{"spec", "lanes", strconv.Itoa(e.Lane)}, strings.Split(e.Field, ".")...)
}

// decodeLine is the line a decoding error points at, where it has an
// offset, else where the field it names is.
func decodeLine(b []byte, err error) int {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return lineAt(b, se.Offset)
	case errors.As(err, &te):
		return lineAt(b, te.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return lineAt(b, int64(len(b)))
	}
	if f := specs.JSONField(err, ""); f != "" {
		return lineOf(b, []string{f})
	}
	return 0
}

func lineAt(b []byte, off int64) int {
	off = min(max(off, 0), int64(len(b)))
	return bytes.Count(b[:off], []byte("\n")) + 1
}

// lineOf is the line of the deepest part of path (object keys and array
// indexes) found in the JSON document b; where a key is missing, the line
// of the value it would be in; 0 for no path. A name that is not a key of
// the object it is looked for in is also looked for one level down (a
// limit's field under "limits", a workload's under "workload").
func lineOf(b []byte, path []string) int {
	if len(path) == 0 {
		return 0
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	best := 0
	var walk func(want []string) bool // false: stop
	walk = func(want []string) bool {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return true
		}
		index := 0
		for dec.More() {
			var name string
			if d == '{' {
				k, err := dec.Token()
				if err != nil {
					return false
				}
				name, _ = k.(string)
			} else {
				name = strconv.Itoa(index)
				index++
			}
			at := lineAt(b, dec.InputOffset())
			switch {
			case len(want) > 0 && name == want[0]:
				best = at
				if !walk(want[1:]) {
					return false
				}
				if len(want) == 1 {
					return false // found it all
				}
			case len(want) > 0 && (name == "limits" || name == "workload"):
				if !walk(want) {
					return false
				}
			default:
				if !skip(dec) {
					return false
				}
			}
		}
		_, err = dec.Token() // the closing delimiter
		return err == nil
	}
	walk(path)
	return best
}

// skip reads one JSON value whole.
func skip(dec *json.Decoder) bool {
	var v json.RawMessage
	return dec.Decode(&v) == nil
}

// LabFile is a run's spec as a lab file a facilitator can edit and load
// with -labs: the lab it came from, if any, gives its texts, verdict and
// steps; otherwise the texts say what to write. id is the new lab's.
func LabFile(id string, spec specs.Spec, from *Lab) Lab {
	spec.Lab = ""
	raw, _ := json.Marshal(spec)
	l := Lab{ID: id, Title: spec.Name, Topic: topicOf(spec), Spec: raw,
		Question: "What question does this lab answer?",
		Before:   "What runs, and what to look for while it runs.",
		After:    "What the measurements show, and why."}
	if from != nil {
		l.Title, l.Seed, l.Question, l.Before, l.After = from.Title, from.Seed, from.Question, from.Before, from.After
		l.RequiresCPUs, l.Topic, l.Verdict, l.Steps = from.RequiresCPUs, from.Topic, from.Verdict, from.Steps
		l.RequiresCPUManager = from.RequiresCPUManager
	}
	if strings.TrimSpace(l.Title) == "" {
		l.Title = id
	}
	return l
}

// LabID makes a lab id from a name: lowercase letters and digits, the
// rest dashes, with suffix after it.
func LabID(name, suffix string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 32 {
			break
		}
	}
	s := strings.TrimSuffix(b.String(), "-")
	if s == "" {
		s = "lab"
	}
	return s + "-" + suffix
}

// topicOf guesses a spec's topic from what its lanes run and limit.
func topicOf(spec specs.Spec) string {
	topic := "cpu"
	for _, l := range spec.Lanes {
		switch {
		case l.Workload.Service() || l.Workload.Kind == specs.KindLoad:
			return "services"
		case l.Limits.DeviceReadBps != "" || l.Limits.DeviceWriteBps != "" || l.Limits.DeviceReadIOps != "" ||
			l.Limits.DeviceWriteIOps != "" || l.Limits.BlkioWeight != "" || l.Limits.BlkioWeightDevice != "" ||
			l.Workload.Kind == specs.KindDiskWrite || l.Workload.Kind == specs.KindDiskRead:
			topic = "block-io"
		case l.Limits.Memory != "" && topic == "cpu":
			topic = "memory"
		}
	}
	return topic
}
