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
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/testbed"
	"github.com/limitlab/limitlab/internal/workshop"
	"github.com/moby/moby/client"
)

// StartCommand is how these machines start an engine.
const StartCommand = "dockerd >/var/log/dockerd.log 2>&1 &"

var (
	once  sync.Once
	eng   *client.Client
	image string
	host  engine.HostInfo
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
func Engine(t testing.TB) (*client.Client, string, engine.HostInfo) {
	t.Helper()
	once.Do(func() { eng, image, host, err = setup() })
	if err != nil {
		t.Fatalf("engine: %v", err)
	}
	return eng, image, host
}

func setup() (*client.Client, string, engine.HostInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := engine.NewClient()
	if err != nil {
		return nil, "", engine.HostInfo{}, err
	}
	if _, err := c.Ping(ctx, client.PingOptions{}); err != nil {
		return nil, "", engine.HostInfo{}, fmt.Errorf("no Docker engine answers at %s (%v); start one with: %s", c.DaemonHost(), err, StartCommand)
	}
	// In the cgroup v2 VM the binary comes built (compiling there is six
	// times slower); elsewhere it is built from this checkout.
	bin := os.Getenv("LIMITLAB_TEST_BINARY")
	if bin == "" {
		dir, err := os.MkdirTemp("", "limitlab-bin")
		if err != nil {
			return nil, "", engine.HostInfo{}, err
		}
		defer os.RemoveAll(dir)
		if bin, err = BuildBinary(dir); err != nil {
			return nil, "", engine.HostInfo{}, err
		}
	}
	h, img, err := testbed.Prepare(ctx, c, bin)
	if err != nil {
		return nil, "", engine.HostInfo{}, err
	}
	if want := os.Getenv("LIMITLAB_EXPECT_CGROUP"); want != "" && want != h.Cgroup.String() {
		return nil, "", engine.HostInfo{}, fmt.Errorf("the engine at %s runs cgroup v%s; these tests expect v%s", c.DaemonHost(), h.Cgroup, want)
	}
	return c, img, h, nil
}

// Labelled counts the containers of a run on the engine (of every run if
// runID is empty).
func Labelled(t testing.TB, runID string) int {
	t.Helper()
	return len(LabelledContainers(t, runID))
}

// LabelledContainers names the containers Labelled counts, each with its
// run label and state, for a failure to say what was left.
func LabelledContainers(t testing.TB, runID string) []string {
	t.Helper()
	c, _, _ := Engine(t)
	label := engine.LabelRun
	if runID != "" {
		label += "=" + runID
	}
	list, err := c.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", label)})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	var out []string
	for _, ct := range list.Items {
		out = append(out, fmt.Sprintf("%s (run %s, %s, %s)", strings.Join(ct.Names, ","), ct.Labels[engine.LabelRun], ct.State, ct.Status))
	}
	return out
}

// Manager returns a workshop.Manager on the real engine that is shut down,
// its containers removed, when the test ends. Tests start runs as they
// please, so no quota applies unless an option sets one; options may also
// set a store, the queue and the rest.
func Manager(t testing.TB, options ...func(*workshop.Options)) *workshop.Manager {
	t.Helper()
	c, img, h := Engine(t)
	opts := workshop.Options{Image: img, Host: h, Log: slog.Default(), Quotas: &workshop.Quotas{}}
	return Managed(t, c, opts, options...)
}

// Submit parses spec, validates it on m and queues the run, failing the
// test at any step.
func Submit(t testing.TB, m *workshop.Manager, spec string) *runner.Run {
	t.Helper()
	parsed, errs := experiments.Parse([]byte(spec))
	if errs != nil {
		t.Fatal(errs)
	}
	p, errs := m.Pool().Validate(parsed)
	if errs != nil {
		t.Fatal(errs)
	}
	r, err := m.SubmitFrom(parsed, p, "", "")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Managed is the workshop of opts, changed by options, on engine c (nil
// with a pool), shut down (its containers or pods removed) when the test
// ends.
func Managed(t testing.TB, c engine.Engine, opts workshop.Options, options ...func(*workshop.Options)) *workshop.Manager {
	t.Helper()
	for _, o := range options {
		o(&opts)
	}
	m := workshop.NewManager(c, opts)
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

// WaitDone waits for a run to end and returns its final view.
func WaitDone(t testing.TB, r *runner.Run, within time.Duration) runner.RunView {
	t.Helper()
	select {
	case <-r.Done():
	case <-time.After(within):
		t.Fatalf("run %s did not end within %s: %+v", r.ID(), within, r.View())
	}
	return r.View()
}

// Plan parses and validates a JSON spec for the manager's host, or fails
// the test.
func Plan(t testing.TB, m *workshop.Manager, specJSON string) (specs.Spec, specs.Plan) {
	t.Helper()
	spec, errs := experiments.Parse([]byte(specJSON))
	if errs != nil {
		t.Fatalf("parse: %v", errs)
	}
	p, errs := m.Pool().Validate(spec)
	if errs != nil {
		t.Fatalf("validate: %v", errs)
	}
	scaleCPUWork(t, &p)
	return spec, p
}

// EmulatedCPU says whether the CPUs under the engine are emulated
// (LIMITLAB_TEST_EMULATED_CPU, which the cgroup v2 VM sets): there the
// host's scheduler, running the vCPU threads beside qemu's own on two
// cores, dilutes the guest's CPU time (measured there: shares-contention
// 1 to 36% off in single runs, 1% natively), so CPU time is no instrument
// for a verdict.
func EmulatedCPU() bool { return os.Getenv("LIMITLAB_TEST_EMULATED_CPU") != "" }

// CheckVerdict fails the test unless a run's verdict was judged and holds:
// passed, or was inconclusive on the host's load with its figures within
// the tolerance all the same (Verdict.Held).
// On emulated CPUs a verdict on CPU time (wall time per CPU second, CPU
// shares, throttled periods) must be judged, and is logged, not required
// to hold; block IO verdicts must hold there too.
func CheckVerdict(t testing.TB, v *models.Verdict) {
	t.Helper()
	switch {
	case v == nil || !v.Judged:
		t.Errorf("not judged: %+v", v)
	case v.Pass:
	case v.Inconclusive && v.Held:
		// The host's own load (these machines' baseline is a quarter of
		// a core) could have decided it, and the figures held regardless.
		t.Logf("inconclusive, and as predicted all the same: %s", v.Explanation)
	case EmulatedCPU() && (v.Metric == specs.MetricCPU || v.Metric == specs.MetricWallTime || v.Metric == specs.MetricThrottling || v.Metric == specs.MetricBurst):
		t.Logf("on emulated CPUs, not as predicted (not required): %s", v.Explanation)
	default:
		t.Errorf("verdict failed: %s", v.Explanation)
	}
}

// scaleCPUWork shrinks the fixed CPU work of a plan's md5 and primes lanes
// by LIMITLAB_TEST_SCALE (0 < scale ≤ 1), which the cgroup v2 VM sets: under
// emulation that work runs six times slower and would outlast the labs'
// durations. The verdicts compare ratios between lanes, which do not
// depend on how much work each does.
func scaleCPUWork(t testing.TB, p *specs.Plan) {
	v := os.Getenv("LIMITLAB_TEST_SCALE")
	if v == "" {
		return
	}
	scale, err := strconv.ParseFloat(v, 64)
	if err != nil || scale <= 0 || scale > 1 {
		t.Fatalf("LIMITLAB_TEST_SCALE=%q: want a number in (0, 1]", v)
	}
	for i := range p.Lanes {
		w := &p.Lanes[i].Workload
		switch w.Kind {
		case specs.KindMD5:
			w.MB = max(1, int(float64(w.MB)*scale))
		case specs.KindPrimes:
			w.MaxPrime = max(1000, int(float64(w.MaxPrime)*scale))
		}
	}
}

// Figure logs one measured figure under a key, as "figure: key | value":
// make bench-v2 collects these lines from the same tests on cgroup v1 (this
// host) and v2 (the VM) into the table in docs/benchmarks.md.
func Figure(t testing.TB, key, format string, args ...any) {
	t.Helper()
	t.Logf("figure: %s | %s", key, fmt.Sprintf(format, args...))
}

// Ratios prints a verdict's ratios as "1.00 : 1.95 : 3.57".
func Ratios(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strings.Join(parts, " : ")
}

// StartLane creates and starts one lane's container on eng, removed when
// the test ends, and returns it and its process's pid.
func StartLane(t testing.TB, eng engine.Engine, image, runID string, lane specs.PlannedLane) (engine.Created, int) {
	t.Helper()
	ctx := context.Background()
	c, err := engine.CreateLane(ctx, eng, "", runID, 0, lane, image, "")
	if c.ID != "" {
		t.Cleanup(func() {
			engine.RemoveRun(context.Background(), eng, runID, []string{c.ID}, []specs.PlannedLane{lane}, slog.Default())
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	ins, err := eng.ContainerInspect(ctx, c.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c, ins.Container.State.Pid
}

// BusyLoops starts n shell busy loops outside Docker, as other work on
// the host would be, and stops them at the test's end or when stop is
// called.
func BusyLoops(t testing.TB, n int) (pids []int, stop func()) {
	t.Helper()
	var cmds []*exec.Cmd
	for range n {
		c := exec.Command("sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
		pids = append(pids, c.Process.Pid)
	}
	stop = func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
		cmds = nil
	}
	t.Cleanup(stop)
	return pids, stop
}
