package runner

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// The runner's tests use the real engine. Without one they fail, saying how
// to start it; they never skip.

var (
	engineOnce sync.Once
	testEng    *client.Client
	testImage  string
	testHost   HostInfo
	engineErr  error
)

// BuildWorkloadBinary compiles the server (which carries the workload
// program) as a static binary into dir.
func buildWorkloadBinary(dir string) (string, error) {
	bin := filepath.Join(dir, "limitlab")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/limitlab/limitlab/cmd/server")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
}

func engine(t testing.TB) (*client.Client, string, HostInfo) {
	t.Helper()
	engineOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		eng, err := NewEngine()
		if err != nil {
			engineErr = err
			return
		}
		if _, err := eng.Ping(ctx, client.PingOptions{}); err != nil {
			engineErr = fmt.Errorf("no Docker engine answers (%v); start one with: dockerd >/var/log/dockerd.log 2>&1 &", err)
			return
		}
		dir, err := os.MkdirTemp("", "limitlab-bin")
		if err != nil {
			engineErr = err
			return
		}
		defer os.RemoveAll(dir)
		bin, err := buildWorkloadBinary(dir)
		if err != nil {
			engineErr = err
			return
		}
		if testImage, err = EnsureImage(ctx, eng, bin, slog.Default()); err != nil {
			engineErr = err
			return
		}
		if testHost, err = ProbeHost(ctx, eng, "/sys/fs/cgroup"); err != nil {
			engineErr = err
			return
		}
		testEng = eng
	})
	if engineErr != nil {
		t.Fatalf("engine: %v", engineErr)
	}
	return testEng, testImage, testHost
}

// labelled counts the containers of a run (all runs if runID is empty).
func labelled(t testing.TB, runID string) int {
	t.Helper()
	eng, _, _ := engine(t)
	label := LabelRun
	if runID != "" {
		label += "=" + runID
	}
	list, err := eng.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", label)})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	return len(list.Items)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
