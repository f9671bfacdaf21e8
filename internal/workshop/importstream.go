package workshop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/store"
)

// Bounds on an imported file's parts, whatever the file's size: what the
// decoder holds at once is one part.
const (
	// maxImportRunBytes bounds the run's view (twelve lanes with their
	// kernel files and a thousand changes fit in well under it).
	maxImportRunBytes = 4 << 20
	// maxImportMessageBytes bounds one message of the stream: a tick of
	// twelve lanes is a few kilobytes, a run message a few dozen.
	maxImportMessageBytes = 1 << 20
	// importSlack is what the decoder may read past the end of a part.
	importSlack = 64 << 10
	// importStoreFactor is what the store takes on disk per byte of the
	// messages it is given (the rows, their index, the WAL), rounded up.
	importStoreFactor = 3
)

// Import records an exported run, read from r as a stream of size bytes
// at most, under a new id and returns the id. A file is data from
// anywhere: the spec is validated as a submission's is (for form, not
// against this host: a run measured elsewhere may ask for CPUs this host
// lacks); every view in it is checked against that spec, and what the
// page turns into commands to copy (docker run, docker update) is rebuilt
// from the validated spec and limits, never taken from the file. Samples
// are stored as parsed, without fields this server does not know, and
// there may be no more of them than the run's own duration and interval
// make. Nothing is stored unless all of it passes.
func (a *Archive) Import(r io.Reader, size int64) (string, error) {
	if a.st == nil {
		return "", errors.New("import: this server keeps no store")
	}
	// An import is recorded as a run is: the same check of the disk, with
	// room for the file's size besides.
	if err := a.st.Health(a.minFree + importStoreFactor*size); err != nil {
		return "", fmt.Errorf("%w: import: %v", ErrStore, err)
	}
	in := &importReader{r: r}
	im := importer{in: in, dec: json.NewDecoder(in), id: newID(), now: time.Now().UTC()}
	if err := im.decode(); err != nil {
		return "", err
	}
	if im.run == nil {
		return "", invalid("import: the file has no run")
	}
	v := *im.run
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	row := store.Run{ID: im.id, Lab: v.Lab, Name: v.Name, State: string(v.State), CreatedAt: v.CreatedAt,
		Summary: Summary(v), Imported: true, View: b}
	if err := a.st.Import(row, im.stream); err != nil {
		return "", fmt.Errorf("import: %w", err)
	}
	a.pruneImports()
	return im.id, nil
}

// importReader is the file, read with a budget: a part of it that runs
// past its bound fails the read, so that the decoder never holds more
// than one part's bound, however large the part claims to be.
type importReader struct {
	r      io.Reader
	read   int64
	budget int64 // the offset reads may not pass; 0: none
	part   string
}

func (ir *importReader) Read(p []byte) (int, error) {
	if ir.budget > 0 {
		left := ir.budget - ir.read
		if left <= 0 {
			return 0, invalid("import: %s", ir.part)
		}
		p = p[:min(int64(len(p)), left)]
	}
	n, err := ir.r.Read(p)
	ir.read += int64(n)
	return n, err
}

// importer decodes one file: its head, then its run, then its stream, one
// message at a time, checking each as it comes.
type importer struct {
	in  *importReader
	dec *json.Decoder
	id  string
	now time.Time

	format  string
	version int
	spec    specs.Spec
	plan    specs.Plan
	run     *runner.RunView
	stream  [][]byte
	counts  streamCounts
}

// bounded decodes the next value into v, reading no more than limit
// bytes past where the decoder stands.
func (im *importer) bounded(v any, limit int64, part string) error {
	im.in.budget = im.dec.InputOffset() + limit + importSlack
	im.in.part = part
	defer func() { im.in.budget = 0 }()
	if err := im.dec.Decode(v); err != nil {
		var bad *InvalidImportError
		if errors.As(err, &bad) {
			return bad
		}
		return invalid("import: %s: %w", part, err)
	}
	return nil
}

func (im *importer) decode() error {
	if t, err := im.dec.Token(); err != nil || t != json.Delim('{') {
		return invalid("import: not a JSON object")
	}
	for im.dec.More() {
		t, err := im.dec.Token()
		if err != nil {
			return invalid("import: not JSON: %w", err)
		}
		key, _ := t.(string)
		switch key {
		case "format":
			err = im.bounded(&im.format, 256, "its format")
		case "version":
			err = im.bounded(&im.version, 64, "its version")
		case "exported_at":
			var at time.Time
			err = im.bounded(&at, 256, "its exported_at")
		case "run":
			err = im.decodeRun()
		case "stream":
			err = im.decodeStream()
		default:
			err = invalid("import: a field %q, which a Limit Lab run export does not have", key)
		}
		if err != nil {
			return err
		}
	}
	if _, err := im.dec.Token(); err != nil {
		return invalid("import: not JSON: %w", err)
	}
	return nil
}

// checkHead refuses a file that does not say, before its run, that it is
// a run export of a version this server reads.
func (im *importer) checkHead() error {
	if im.format != ExportFormat || im.version != 1 {
		return invalid("import: not a Limit Lab run export (format %q, version %d before its run; want %q, 1)", im.format, im.version, ExportFormat)
	}
	return nil
}

func (im *importer) decodeRun() error {
	if err := im.checkHead(); err != nil {
		return err
	}
	if im.run != nil {
		return invalid("import: the file has two runs")
	}
	var v runner.RunView
	if err := im.bounded(&v, maxImportRunBytes, fmt.Sprintf("the run is larger than the %d MiB a run's view may be", maxImportRunBytes>>20)); err != nil {
		return err
	}
	raw, err := json.Marshal(v.Spec)
	if err != nil {
		return err
	}
	spec, errs := experiments.ParseRecorded(raw)
	if errs != nil {
		return invalid("import: the run's spec: %w", errs)
	}
	if len(v.Lanes) == 0 || len(v.Lanes) > specs.MaxLanes {
		return invalid("import: %d lanes, want 1 to %d", len(v.Lanes), specs.MaxLanes)
	}
	plan, errs := experiments.Validate(spec, specs.Host{DataRootDevice: "/dev/auto"})
	if errs != nil {
		return invalid("import: the run's spec: %w", errs)
	}
	if err := cleanView(&v, spec, plan, im.id, im.now); err != nil {
		return invalid("import: the run: %w", err)
	}
	im.spec, im.plan, im.run = spec, plan, &v
	im.counts = newStreamCounts(plan, v)
	return nil
}

func (im *importer) decodeStream() error {
	if im.run == nil {
		return invalid("import: the stream comes before the run: a Limit Lab export writes its run first")
	}
	if t, err := im.dec.Token(); err != nil || t != json.Delim('[') {
		return invalid("import: the stream is not a list")
	}
	for i := 0; im.dec.More(); i++ {
		var msg runner.Message
		part := fmt.Sprintf("stream message %d is larger than the %d KiB a message may be", i, maxImportMessageBytes>>10)
		if err := im.bounded(&msg, maxImportMessageBytes, part); err != nil {
			return err
		}
		b, err := im.message(i, msg)
		if err != nil {
			return err
		}
		im.stream = append(im.stream, b)
	}
	if _, err := im.dec.Token(); err != nil {
		return invalid("import: the stream: %w", err)
	}
	return nil
}

// message checks stream message i and returns it as it is stored.
func (im *importer) message(i int, msg runner.Message) ([]byte, error) {
	lanes := len(im.run.Lanes)
	switch msg.Type {
	case runner.KindSamples:
		for _, s := range msg.Samples {
			if s.Lane < 0 || s.Lane >= lanes {
				return nil, invalid("import: stream message %d: a sample of lane %d, but the run has %d lanes", i, s.Lane, lanes)
			}
			if err := im.counts.sample(s.Lane); err != nil {
				return nil, invalid("import: stream message %d: %w", i, err)
			}
		}
		msg = runner.Message{Type: runner.KindSamples, Samples: msg.Samples, SentUs: msg.SentUs}
	case runner.KindHost:
		h := msg.Host
		if h == nil || !finite(h.T, h.DT, h.ForeignCores, h.StealCores) || h.ForeignCores < 0 || h.StealCores < 0 || h.DT < 0 {
			return nil, invalid("import: stream message %d: a host sample that is not one (%+v)", i, h)
		}
		if err := im.counts.host(); err != nil {
			return nil, invalid("import: stream message %d: %w", i, err)
		}
		msg = runner.Message{Type: runner.KindHost, Host: h}
	case runner.KindRun:
		if msg.Run == nil {
			return nil, invalid("import: stream message %d: a run message without a run", i)
		}
		if err := im.counts.view(); err != nil {
			return nil, invalid("import: stream message %d: %w", i, err)
		}
		if err := cleanView(msg.Run, im.spec, im.plan, im.id, im.now); err != nil {
			return nil, invalid("import: stream message %d: %w", i, err)
		}
		msg = runner.Message{Type: runner.KindRun, Run: msg.Run}
	default:
		return nil, invalid("import: stream message %d: unknown type %q", i, msg.Type)
	}
	return json.Marshal(msg)
}

// streamCounts bounds what a run's stream may hold by what the run could
// have published: a sample per lane per tick of its sampling interval for
// as long as it ran, a host sample per tick, and a run view per change or
// state, each with a margin.
type streamCounts struct {
	ticks   int // the most samples of one lane, and of the host
	views   int
	samples []int
	hosts   int
	runs    int
}

// importTickSlack is how long past its planned time a run may have been
// sampled (a lane slow to start keeps its duration from its start).
const importTickSlack = time.Minute

func newStreamCounts(plan specs.Plan, v runner.RunView) streamCounts {
	interval := plan.Interval
	if interval == 0 {
		// The server's own interval, as the file gives it, no finer than
		// any server samples.
		interval = max(time.Duration(v.IntervalMs)*time.Millisecond, specs.MinInterval)
	}
	ran := time.Duration(max(len(plan.Groups), 1))*plan.Duration + importTickSlack
	return streamCounts{ticks: int(ran/interval) + 10, views: maxImportChanges + maxImportEvents + 64, samples: make([]int, len(plan.Lanes))}
}

func (c *streamCounts) sample(lane int) error {
	if c.samples[lane]++; c.samples[lane] > c.ticks {
		return fmt.Errorf("more than %d samples of lane %d, more than the run's duration and interval make", c.ticks, lane)
	}
	return nil
}

func (c *streamCounts) host() error {
	if c.hosts++; c.hosts > c.ticks {
		return fmt.Errorf("more than %d host samples, more than the run's duration and interval make", c.ticks)
	}
	return nil
}

func (c *streamCounts) view() error {
	if c.runs++; c.runs > c.views {
		return fmt.Errorf("more than %d run views, more than a run publishes", c.views)
	}
	return nil
}

// ImportExport imports a file held whole, as Import reads one.
func (a *Archive) ImportExport(e Export) (string, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return "", err
	}
	return a.Import(bytes.NewReader(b), int64(len(b)))
}
