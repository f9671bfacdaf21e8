package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/web"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestServerReapsOnStartAndCleansUpOnSIGTERM runs the real binary: it
// removes a labelled leftover when it starts, and on SIGTERM stops its
// running experiment and removes its containers before it exits.
func TestServerReapsOnStartAndCleansUpOnSIGTERM(t *testing.T) {
	eng, image, _ := enginetest.Engine(t)
	ctx := context.Background()

	// What an earlier life of this server (its data directory names its
	// instance) left when it died, and a container of another server on
	// the same engine, which must stay.
	dataDir := t.TempDir()
	if err := os.WriteFile(dataDir+"/instance", []byte("earlier\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for run, instance := range map[string]string{"earlier-instance": "earlier", "other-server": "someone-else"} {
		res, err := eng.ContainerCreate(ctx, client.ContainerCreateOptions{
			Config: &container.Config{Image: image, Cmd: []string{"spin"}, Labels: map[string]string{engine.LabelRun: run, engine.LabelInstance: instance}},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = eng.ContainerRemove(ctx, res.ID, client.ContainerRemoveOptions{Force: true}) })
	}

	bin, err := enginetest.BuildBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cmd, exited, base := startServer(t, bin, dataDir)
	if n := enginetest.Labelled(t, "earlier-instance"); n != 0 {
		t.Errorf("%d leftover containers after start-up, want them reaped", n)
	}
	if n := enginetest.Labelled(t, "other-server"); n != 1 {
		t.Errorf("another server's container: %d left after start-up, want it kept", n)
	}

	created := struct{ ID string }{submit(t, base,
		`{"name": "long", "duration": "5m", "lanes": [{"workload": {"kind": "spin", "seconds": 300}, "limits": {"cpus": "0.1"}}]}`)}
	enginetest.WaitFor(t, time.Minute, "the run's container", func() bool { return enginetest.Labelled(t, created.ID) == 1 })

	if err := terminate(t, cmd, exited); err != nil {
		t.Errorf("server exited with %v after SIGTERM, want a clean exit", err)
	}
	if n := enginetest.Labelled(t, created.ID); n != 0 {
		t.Errorf("%d containers of the run remain after shutdown", n)
	}
}

// submit posts a spec to a server's API, as a script does, and returns
// the new run's id.
func submit(t testing.TB, base, spec string) string {
	t.Helper()
	res, err := http.Post(base+"/api/runs", "application/json", strings.NewReader(spec))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var created struct{ ID string }
	if err := json.Unmarshal(body, &created); err != nil || created.ID == "" {
		t.Fatalf("POST /api/runs: %d %s", res.StatusCode, body)
	}
	return created.ID
}

// waitEnded polls a run until its view says it ended, decoding the view
// into v (which must have an Ended field).
func waitEnded(t *testing.T, base, id string, within time.Duration, v any) {
	t.Helper()
	enginetest.WaitFor(t, within, "run "+id+" to end", func() bool {
		res, err := http.Get(base + "/api/runs/" + id)
		if err != nil {
			return false
		}
		defer res.Body.Close()
		var ended struct{ Ended bool }
		b, _ := io.ReadAll(res.Body)
		return json.Unmarshal(b, &ended) == nil && ended.Ended && json.Unmarshal(b, v) == nil
	})
}

// startServer runs the server binary on a free port with its store in
// dataDir, and waits until it answers.
func startServer(t testing.TB, bin, dataDir string, args ...string) (*exec.Cmd, chan error, string) {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(bin, append([]string{"-addr", addr, "-data", dataDir}, args...)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	base := "http://" + addr
	enginetest.WaitFor(t, 2*time.Minute, "the server to answer", func() bool {
		res, err := http.Get(base + "/api/host")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	return cmd, exited, base
}

// terminate sends the server SIGTERM and returns how it exited, failing
// the test if it has not within a minute.
func terminate(t testing.TB, cmd *exec.Cmd, exited chan error) error {
	t.Helper()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("the server (pid %d) did not exit within a minute of SIGTERM", cmd.Process.Pid)
		return nil
	}
}

// TestKilledServerMarksItsRunInterruptedOnRestart kills the server with
// SIGKILL mid-run: nothing is cleaned up then. The next server on the same
// data directory removes the run's container and shows the run as
// interrupted, with the samples it recorded.
func TestKilledServerMarksItsRunInterruptedOnRestart(t *testing.T) {
	bin, err := enginetest.BuildBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	cmd, exited, base := startServer(t, bin, data)
	created := struct{ ID string }{submit(t, base,
		`{"name": "killed", "duration": "5m", "lanes": [{"workload": {"kind": "spin", "seconds": 300}, "limits": {"cpus": "0.1"}}]}`)}
	samples := func(base string) int {
		res, err := http.Get(base + "/api/runs/" + created.ID + "/export?format=csv")
		if err != nil {
			return 0
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return strings.Count(string(b), "\n") - 1
	}
	// The store's writer commits each batch within milliseconds of its
	// publication: by the time the stream holds 16 samples, the store has
	// the first 8.
	enginetest.WaitFor(t, time.Minute, "samples of the running lane", func() bool { return samples(base) >= 16 })

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	if n := enginetest.Labelled(t, created.ID); n != 1 {
		t.Fatalf("%d containers of the run after SIGKILL, want the one left running", n)
	}

	_, _, base = startServer(t, bin, data)
	if n := enginetest.Labelled(t, created.ID); n != 0 {
		t.Errorf("%d containers of the interrupted run after the restart", n)
	}
	var v runner.RunView
	res, err := http.Get(base + "/api/runs/" + created.ID)
	if err != nil {
		t.Fatal(err)
	}
	_ = json.NewDecoder(res.Body).Decode(&v)
	res.Body.Close()
	if v.State != runner.StateInterrupted || !strings.Contains(v.Error, "interrupted: the server stopped while this run was running") {
		t.Errorf("after the restart: state %q, error %q", v.State, v.Error)
	}
	if v.Lanes[0].State != runner.LaneInterrupted {
		t.Errorf("lane state %q, want interrupted", v.Lanes[0].State)
	}
	if n := samples(base); n < 8 {
		t.Errorf("%d samples kept, want the 8 or more recorded before the kill", n)
	}

	// limitlab export -html reads the same data directory beside the
	// running server: the interrupted run, as one page.
	page := filepath.Join(t.TempDir(), "run.html")
	out, err := exec.Command(bin, "export", "-html", "-data", data, "-o", page, created.ID).CombinedOutput()
	b, _ := os.ReadFile(page)
	if err != nil || !strings.Contains(string(out), "wrote "+page) || !strings.Contains(string(b), `id="replay-data"`) || !strings.Contains(string(b), "interrupted") {
		t.Errorf("limitlab export -html: %v %s (%d bytes)", err, out, len(b))
	}
	missing := filepath.Join(t.TempDir(), "none.html")
	out, err = exec.Command(bin, "export", "-html", "-data", data, "-o", missing, "nosuchrun").CombinedOutput()
	if _, statErr := os.Stat(missing); err == nil || !strings.Contains(string(out), "no such run") || statErr == nil {
		t.Errorf("exporting a run that is not there: %v %s, file left: %v", err, out, statErr == nil)
	}
}

func TestFlags(t *testing.T) {
	if _, err := parseFlags([]string{"-sample", "10ms"}); err == nil {
		t.Error("a 10ms sampling interval was accepted")
	}
	c, err := parseFlags(nil)
	if err != nil || c.addr != "127.0.0.1:8080" || c.interval != 250*time.Millisecond || c.defaultMem != 512<<20 || c.keep.Runs != 2000 {
		t.Errorf("defaults %+v, %v", c, err)
	}
}

func TestFlagsGuardAWorkshop(t *testing.T) {
	t.Setenv("LIMITLAB_PRESENTER_TOKEN", "")
	dir := t.TempDir()
	short, long := dir+"/short", dir+"/long"
	if err := os.WriteFile(short, []byte("tooshort\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(long, []byte("0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string // part of the error; "" for none
	}{
		{"loopback by default", nil, ""},
		{"a network without host names", []string{"-addr", "0.0.0.0:8080"}, "-allow-host"},
		{"a network with host names", []string{"-addr", "0.0.0.0:8080", "-allow-host", "lab.example.org"}, ""},
		{"a short token", []string{"-presenter-token-file", short}, "at least 16"},
		{"a token file", []string{"-presenter-token-file", long}, ""},
		{"a token file that is not there", []string{"-presenter-token-file", dir + "/none"}, "no such file"},
		{"a sampler without its token", []string{"-sampler", "http://bench:7071"}, "-sampler-token-file"},
		{"a sampler in a pool", []string{"-engines", "e.json", "-sampler", "http://bench:7071", "-sampler-token-file", long}, "in a pool"},
		{"a sampler", []string{"-sampler", "http://bench:7071", "-sampler-token-file", long}, ""},
		{"more than one run at once in a pool", []string{"-engines", "e.json", "-max-running", "2"}, "one run at a time"},
		{"a trusted proxy that is no address", []string{"-trusted-proxies", "127.0.0.1,proxy.example.org"}, "proxy.example.org"},
		{"trusted proxies", []string{"-trusted-proxies", "127.0.0.1, 10.0.0.0/8"}, ""},
		{"a certificate without its key", []string{"-tls-cert", long}, "go together"},
		{"a certificate that is no certificate", []string{"-tls-cert", long, "-tls-key", long}, "-tls-cert/-tls-key"},
		{"no viewers", []string{"-max-viewers-per-run", "0"}, "at least 1"},
		{"a join code of four digits", []string{"-join-code", "4242"}, "at least 10"},
		{"a join code of nine characters", []string{"-join-code", "limitlab9"}, "at least 10"},
		{"a strong join code", []string{"-join-code", "limitlab-4242"}, ""},
		{"a join code made", []string{"-join-code", "auto"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseFlags(tt.args)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one naming %q", err, tt.want)
			}
			if tt.name == "a token file" && c.presenter != "0123456789abcdef0123" {
				t.Errorf("token %q", c.presenter)
			}
			if tt.name == "a join code made" && (!c.joinCodeMade || len(c.joinCode) < web.MinJoinCode || c.joinCode == "auto") {
				t.Errorf("-join-code auto made %q", c.joinCode)
			}
		})
	}
	t.Setenv("LIMITLAB_JOIN_CODE", "4242")
	if _, err := parseFlags(nil); err == nil || !strings.Contains(err.Error(), "at least 10") {
		t.Errorf("a short join code from the environment: %v", err)
	}
	t.Setenv("LIMITLAB_JOIN_CODE", "")
	t.Setenv("LIMITLAB_PRESENTER_TOKEN", "short")
	if _, err := parseFlags(nil); err == nil {
		t.Error("a short token from the environment accepted")
	}
}
