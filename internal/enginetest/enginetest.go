// Package enginetest connects tests to the real Docker Engine and builds
// the workload image once per test binary. Without an engine the tests
// fail, saying how to start one; they never skip.
package enginetest

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

	"github.com/limitlab/limitlab/internal/runner"
	"github.com/moby/moby/client"
)

// StartCommand is how these machines start an engine.
const StartCommand = "dockerd >/var/log/dockerd.log 2>&1 &"

var (
	once  sync.Once
	eng   *client.Client
	image string
	host  runner.HostInfo
	err   error
)

// BuildBinary compiles the server, which carries the workload program, as a
// static binary into dir.
func BuildBinary(dir string) (string, error) {
	bin := filepath.Join(dir, "limitlab")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/limitlab/limitlab/cmd/server")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
}

// Engine returns a client of the real engine, the workload image and what
// the host supports, or fails the test.
func Engine(t testing.TB) (*client.Client, string, runner.HostInfo) {
	t.Helper()
	once.Do(func() { eng, image, host, err = setup() })
	if err != nil {
		t.Fatalf("engine: %v", err)
	}
	return eng, image, host
}

func setup() (*client.Client, string, runner.HostInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := runner.NewEngine()
	if err != nil {
		return nil, "", runner.HostInfo{}, err
	}
	if _, err := c.Ping(ctx, client.PingOptions{}); err != nil {
		return nil, "", runner.HostInfo{}, fmt.Errorf("no Docker engine answers at %s (%v); start one with: %s", c.DaemonHost(), err, StartCommand)
	}
	dir, err := os.MkdirTemp("", "limitlab-bin")
	if err != nil {
		return nil, "", runner.HostInfo{}, err
	}
	defer os.RemoveAll(dir)
	bin, err := BuildBinary(dir)
	if err != nil {
		return nil, "", runner.HostInfo{}, err
	}
	img, err := runner.EnsureImage(ctx, c, bin, slog.Default())
	if err != nil {
		return nil, "", runner.HostInfo{}, err
	}
	h, err := runner.ProbeHost(ctx, c, "/sys/fs/cgroup")
	if err != nil {
		return nil, "", runner.HostInfo{}, err
	}
	return c, img, h, nil
}

// Labelled counts the containers of a run on the engine (of every run if
// runID is empty).
func Labelled(t testing.TB, runID string) int {
	t.Helper()
	c, _, _ := Engine(t)
	label := runner.LabelRun
	if runID != "" {
		label += "=" + runID
	}
	list, err := c.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", label)})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	return len(list.Items)
}

// Manager returns a runner.Manager on the real engine that is shut down,
// its containers removed, when the test ends. Tests start runs as they
// please, so no quota applies unless an option sets one; options may also
// set a store, the queue and the rest.
func Manager(t testing.TB, options ...func(*runner.Options)) *runner.Manager {
	t.Helper()
	c, img, h := Engine(t)
	opts := runner.Options{Image: img, Host: h, Log: slog.Default(), Quotas: &runner.Quotas{}}
	for _, o := range options {
		o(&opts)
	}
	m := runner.NewManager(c, opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = m.Shutdown(ctx)
	})
	return m
}

// WaitFor polls cond until it holds or the deadline passes.
func WaitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
