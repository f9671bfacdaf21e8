package web

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedTemplatesAreCurrent fails when the committed *_templ.go
// files differ from what the pinned templ generates from the .templ files.
// It generates into a scratch copy: templ skips files it deems current, so
// asking it about the real ones proves nothing.
func TestGeneratedTemplatesAreCurrent(t *testing.T) {
	sources, err := filepath.Glob("*.templ")
	if err != nil || len(sources) == 0 {
		t.Fatalf("no templates: %v", err)
	}
	dir := t.TempDir()
	templ := filepath.Join(dir, "templ")
	if out, err := exec.Command("go", "build", "-o", templ, "github.com/a-h/templ/cmd/templ").CombinedOutput(); err != nil {
		t.Fatalf("build the pinned templ: %v\n%s", err, out)
	}
	work := filepath.Join(dir, "web")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, src := range sources {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, src), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(templ, "generate")
	cmd.Dir = work
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("templ generate: %v\n%s", err, out)
	}
	for _, src := range sources {
		gen := src[:len(src)-len(".templ")] + "_templ.go"
		want, err := os.ReadFile(filepath.Join(work, gen))
		if err != nil {
			t.Fatalf("templ made no %s: %v", gen, err)
		}
		got, err := os.ReadFile(gen)
		if err != nil {
			t.Errorf("%s is not committed: run `go generate ./web`", gen)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is out of date: run `go generate ./web` and commit it", gen)
		}
	}
}
