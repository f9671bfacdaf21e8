package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/moby/moby/client"
)

// variant is the binary with bytes appended, which a static ELF ignores:
// another build, as far as its workload image's tag goes.
func variant(t *testing.T, bin, suffix string) string {
	t.Helper()
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "limitlab")
	if err := os.WriteFile(out, append(b, []byte("\x00"+suffix)...), 0o755); err != nil {
		t.Fatal(err)
	}
	return out
}

// imageOf is the workload image a server started on: the one its data
// directory records.
func imageOf(t *testing.T, dataDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "workload-image"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))[0]
}

// A server keeps only its current workload image: started again with
// another binary, it removes the image its earlier binary made, and no
// image of another server's.
func TestAServerKeepsOnlyItsCurrentImage(t *testing.T) {
	eng, _, _ := enginetest.Engine(t)
	ctx := context.Background()
	bin, err := enginetest.BuildBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	exists := func(ref string) bool {
		_, err := eng.ImageInspect(ctx, ref)
		return err == nil
	}
	startStop := func(bin, dataDir string) string {
		cmd, exited, _ := startServer(t, bin, dataDir)
		if err := terminate(t, cmd, exited); err != nil {
			t.Fatalf("the server exited with %v", err)
		}
		img := imageOf(t, dataDir)
		t.Cleanup(func() { _, _ = eng.ImageRemove(ctx, img, client.ImageRemoveOptions{}) })
		return img
	}
	mine, theirs := t.TempDir(), t.TempDir()
	other := startStop(variant(t, bin, "another server"), theirs)
	old := startStop(variant(t, bin, "before the upgrade"), mine)
	if !exists(old) || !exists(other) {
		t.Fatalf("the two servers' images: %s %v, %s %v", old, exists(old), other, exists(other))
	}
	current := startStop(variant(t, bin, "after the upgrade"), mine)
	if current == old || !strings.HasPrefix(current, engine.ImageRepo+":") {
		t.Fatalf("the upgraded server's image is %q, its earlier one %q", current, old)
	}
	if exists(old) {
		t.Errorf("the server's earlier image %s is still there after its upgrade", old)
	}
	if !exists(current) || !exists(other) {
		t.Errorf("after the upgrade: its image %s there: %v; another server's %s there: %v", current, exists(current), other, exists(other))
	}
}
