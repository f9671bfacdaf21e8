package workshop_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/limitlab/limitlab/internal/engine/enginefake"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workshop"
)

// These tests hold today's server to what its earlier self recorded
// (testdata/v1/README.md): a store and exports from before the run's
// typed record, which a later store and import must still read.

// gunzip is a fixture's bytes.
func gunzip(t *testing.T, name string) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "v1", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// samplesOf counts the lane-samples of a run's stream.
func samplesOf(t *testing.T, stream []json.RawMessage) int {
	t.Helper()
	n := 0
	for _, raw := range stream {
		var m runner.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("a message of the stream: %v", err)
		}
		n += len(m.Samples)
	}
	return n
}

// A store the server wrote before the record opens with every one of its
// runs, each with its lanes, its verdict where its lab has one, its live
// change, its series and its stream.
func TestAStoreFromBeforeTheRecordShowsEveryRun(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "limitlab.db"), gunzip(t, "store-v1.db.gz"), 0o600); err != nil {
		t.Fatal(err)
	}
	st := openStore(t, dir)
	t.Cleanup(func() { st.Close() })
	m := fakeManager(t, enginefake.New(), workshop.Options{Store: st})
	runs := m.Archive().List("", 100)
	if len(runs) != 9 {
		t.Fatalf("%d runs listed, want the store's 9", len(runs))
	}
	labs, imported, series, changed := map[string]bool{}, 0, 0, 0
	for _, v := range runs {
		full, ok := m.Archive().View(v.ID)
		if !ok || full.State != runner.StateDone || len(full.Lanes) == 0 {
			t.Errorf("run %s (%s): found %v, state %s, %d lanes; want it done with its lanes", v.ID, v.Name, ok, full.State, len(full.Lanes))
			continue
		}
		e, err := m.Archive().Export(v.ID)
		if err != nil {
			t.Fatalf("export of %s: %v", v.ID, err)
		}
		if n := samplesOf(t, e.Stream); n == 0 {
			t.Errorf("run %s (%s) has no samples to replay", v.ID, v.Name)
		}
		if full.Lab != "" {
			labs[full.Lab] = true
			if lab, ok := experiments.LabByID(full.Lab); ok && lab.Verdict != nil && full.Verdict == nil {
				t.Errorf("the %s run has no verdict", full.Lab)
			}
		}
		if full.Imported {
			imported++
		}
		if full.Series != nil {
			series++
		}
		changed += len(full.Changes)
	}
	for _, lab := range []string{"cpus-ladder", "shares-contention", "memory-oom", "runtime-cpus"} {
		if !labs[lab] {
			t.Errorf("no run of the lab %s", lab)
		}
	}
	if imported != 1 || series != 2 || changed != 1 {
		t.Errorf("%d imported runs, %d runs of a series, %d live changes; want 1, 2 and 1", imported, series, changed)
	}
}

// A version 1 export imports as it was exported: the same run, lanes,
// verdict and changes, and every sample of its stream to replay.
func TestVersionOneExportsImportAndReplay(t *testing.T) {
	m := fakeManager(t, enginefake.New(), workshop.Options{Store: fakeStore(t)})
	names, err := filepath.Glob(filepath.Join("testdata", "v1", "export-v1-*.json.gz"))
	if err != nil || len(names) != 3 {
		t.Fatalf("exports %v (%v), want three", names, err)
	}
	for _, name := range names {
		b := gunzip(t, filepath.Base(name))
		var was workshop.Export
		if err := json.Unmarshal(b, &was); err != nil {
			t.Fatal(err)
		}
		if was.Format != workshop.ExportFormat || was.Version != 1 {
			t.Fatalf("%s is %s version %d, want a version 1 export", name, was.Format, was.Version)
		}
		id, err := m.Archive().Import(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("import of %s: %v", name, err)
		}
		v, ok := m.Archive().View(id)
		if !ok {
			t.Fatalf("the import of %s is not in the history", name)
		}
		if v.Name != was.Run.Name || v.Lab != was.Run.Lab || len(v.Lanes) != len(was.Run.Lanes) || len(v.Changes) != len(was.Run.Changes) || !v.Imported {
			t.Errorf("%s imported as %q (lab %q, %d lanes, %d changes, imported %v), want %q (lab %q, %d lanes, %d changes)",
				name, v.Name, v.Lab, len(v.Lanes), len(v.Changes), v.Imported, was.Run.Name, was.Run.Lab, len(was.Run.Lanes), len(was.Run.Changes))
		}
		if (v.Verdict == nil) != (was.Run.Verdict == nil) || v.Verdict != nil && v.Verdict.Pass != was.Run.Verdict.Pass {
			t.Errorf("%s imported with verdict %+v, want %+v", name, v.Verdict, was.Run.Verdict)
		}
		got, err := m.Archive().Export(id)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := samplesOf(t, got.Stream), samplesOf(t, was.Stream); a != b || a == 0 {
			t.Errorf("%s replays %d samples, want its %d", name, a, b)
		}
	}
}
