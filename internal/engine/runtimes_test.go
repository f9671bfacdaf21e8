package engine_test

import (
	"context"
	"crypto/rand"
	"log/slog"
	"os"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
)

// TestAnOldRuntimesImageGoesWithItsWorkloadImage: a server that prepares
// an engine with a new binary makes its runtimes image from the base that
// images/runtimes/build.sh imported (the test fails without it), named
// after its workload image; when that workload image is removed as the
// server's previous one, its runtimes image goes too, and the base stays.
func TestAnOldRuntimesImageGoesWithItsWorkloadImage(t *testing.T) {
	eng, _, h := enginetest.Engine(t)
	if h.RuntimesImage == "" {
		t.Fatalf("no runtimes image on the engine: %s", h.NoRuntimes)
	}
	ctx := context.Background()
	bin, err := enginetest.BuildBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// A few bytes more make it a binary of its own, with images of its own.
	f, err := os.OpenFile(bin, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.Write([]byte(rand.Text()))
	f.Close()
	log := slog.New(slog.DiscardHandler)
	workload, err := engine.EnsureImage(ctx, eng, bin, log)
	if err != nil {
		t.Fatal(err)
	}
	host, err := engine.ProbeHost(ctx, eng, engine.HostProbe{Image: workload, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	_, tag, _ := strings.Cut(workload, ":")
	if !strings.HasPrefix(host.RuntimesImage, engine.RuntimesRepo+":"+tag+"-") {
		t.Fatalf("runtimes image %q (%s) for workload image %s", host.RuntimesImage, host.NoRuntimes, workload)
	}
	engine.RemoveOldImage(ctx, eng, workload, log)
	for _, ref := range []string{workload, host.RuntimesImage} {
		if _, err := eng.ImageInspect(ctx, ref); !cerrdefs.IsNotFound(err) {
			t.Errorf("%s is still there (%v)", ref, err)
		}
	}
	if _, err := eng.ImageInspect(ctx, engine.RuntimesBase); err != nil {
		t.Errorf("the base went too: %v", err)
	}
}
