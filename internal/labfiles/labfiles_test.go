package labfiles

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/experiments"
)

const lab = `{
  "id": "ID",
  "title": "A facilitator's lab",
  "topic": "cpu",
  "spec": {"name": "mine", "lanes": [{"name": "a", "workload": {"kind": "spin", "seconds": 5}, "limits": {"cpus": "0.5"}}]}
}`

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	// Written aside and renamed in, as editors do.
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestWatchLoadsAndReloads(t *testing.T) {
	prev := experiments.Current()
	t.Cleanup(func() { experiments.Install(prev) })
	dir := t.TempDir()
	write(t, dir, "one.json", strings.Replace(lab, "ID", "one", 1))
	write(t, dir, "broken.json", strings.Replace(strings.Replace(lab, "ID", "two", 1), `"topic": "cpu"`, `"topic": "GPU!"`, 1))
	write(t, dir, "notes.txt", "not a lab")
	ctx, cancel := context.WithCancel(context.Background())
	done, err := Watch(ctx, dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-done })

	c := experiments.Current()
	if l, ok := c.Lab("one"); !ok || l.File != "one.json" {
		t.Fatalf("one.json not loaded: %+v", c.Broken())
	}
	if b := c.Broken(); len(b) != 1 || b[0].File != "broken.json" || b[0].Field != "topic" || b[0].Line != 4 {
		t.Fatalf("broken = %+v", b)
	}
	if len(c.Labs()) != len(experiments.Builtin())+1 {
		t.Fatalf("%d labs", len(c.Labs()))
	}

	// Mended, added, then removed: each change is seen.
	write(t, dir, "broken.json", strings.Replace(lab, "ID", "mended", 1))
	waitFor(t, "the mended lab", func() bool {
		_, ok := experiments.LabByID("mended")
		return ok && len(experiments.Current().Broken()) == 0
	})
	write(t, dir, "one.json", strings.Replace(strings.Replace(lab, "ID", "one", 1), "A facilitator's lab", "Renamed", 1))
	waitFor(t, "the new title", func() bool { l, _ := experiments.LabByID("one"); return l.Title == "Renamed" })
	if err := os.Remove(filepath.Join(dir, "one.json")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the lab gone", func() bool { _, ok := experiments.LabByID("one"); return !ok })
	// A lab broken later leaves the others loaded and lists it.
	write(t, dir, "broken.json", `{"id": "mended",`)
	waitFor(t, "the broken file listed", func() bool { return len(experiments.Current().Broken()) == 1 })
	if b := experiments.Current().Broken()[0]; b.File != "broken.json" || !strings.Contains(b.Message, "JSON") {
		t.Fatalf("broken = %+v", b)
	}
}

func TestLoadRefusesOversizedAndOddFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "huge.json", `{"id": "huge", "title": "`+strings.Repeat("x", experiments.MaxLabFile)+`"}`)
	if err := os.Mkdir(filepath.Join(dir, "dir.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b := c.Broken(); len(b) != 2 || !strings.Contains(b[1].Message, "bytes") || !strings.Contains(b[0].Message, "regular") {
		t.Fatalf("broken = %+v", b)
	}
	if _, err := Load(filepath.Join(dir, "absent")); err == nil {
		t.Fatal("a missing directory is not an error")
	}
}

// TestTheDocumentedExampleLoads: docs/labs.md's complete example is a lab
// file that loads, steps and all.
func TestTheDocumentedExampleLoads(t *testing.T) {
	doc, err := os.ReadFile("../../docs/labs.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "## A complete example")
	if !ok {
		t.Fatal("docs/labs.md has no complete example")
	}
	_, block, _ := strings.Cut(after, "```json\n")
	block, _, _ = strings.Cut(block, "```")
	l, broken := experiments.ParseLabFile("example.json", []byte(block))
	if broken != nil {
		t.Fatalf("the documented example does not load: %v", broken)
	}
	if len(l.Steps) != 3 || l.Steps[2].Change == nil || l.Verdict == nil {
		t.Errorf("example read as %+v", l)
	}
	// The documented error is the one a broken lane gets (its line aside).
	bad := strings.Replace(strings.Replace(lab, "ID", "x", 1), `"cpus": "0.5"`, `"cpus": "half"`, 1)
	_, b := experiments.ParseLabFile("broken.json", []byte(bad))
	if b == nil || !strings.Contains(string(doc), "broken.json:9: "+b.Field+": "+b.Message) {
		t.Errorf("docs/labs.md does not show the error a broken lane gets: %v", b)
	}
}
