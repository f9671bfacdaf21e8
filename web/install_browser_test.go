package web

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/limitlab/limitlab/internal/enginetest"
)

// TestGoInstallGivesChartsInChromium: `go install` of the server from a
// clean clone of this repository and a clean module cache, with neither
// npm nor make, gives a binary whose pages draw charts. The module cache
// is filled from a proxy of the modules this machine has (so that the
// test needs no network); CGO is off and the paths trimmed, as a release
// builds.
func TestGoInstallGivesChartsInChromium(t *testing.T) {
	dir := t.TempDir()
	src, gobin := filepath.Join(dir, "src"), filepath.Join(dir, "bin")
	if out, err := exec.Command("git", "clone", "-q", "..", src).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	install := exec.Command("go", "install", "./cmd/server")
	install.Dir = src
	install.Env = append(os.Environ(), "GOBIN="+gobin, "GOMODCACHE="+filepath.Join(dir, "mod"), "GOFLAGS=-trimpath -modcacherw",
		"GOPROXY=file://"+filepath.Join(strings.TrimSpace(string(modcache)), "cache", "download"), "GOSUMDB=off", "CGO_ENABLED=0")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install: %v\n%s", err, out)
	}
	t.Logf("go install from a clean clone and module cache: %s", time.Since(start).Round(time.Second))
	bin := filepath.Join(gobin, "server")
	if _, err := os.Stat(filepath.Join(src, "node_modules")); err == nil {
		t.Fatal("the clone has node_modules: npm ran")
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "-addr", addr, "-data", filepath.Join(dir, "data"))
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
		}
	})
	base := "http://" + addr
	enginetest.WaitFor(t, 2*time.Minute, "the installed server to be ready", func() bool {
		res, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	res, err := http.Post(base+"/api/runs", "application/json",
		strings.NewReader(`{"name": "installed", "duration": "10s", "lanes": [{"workload": {"kind": "spin", "seconds": 2}, "limits": {"cpus": "0.5"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var created struct{ ID string }
	_ = json.NewDecoder(res.Body).Decode(&created)
	res.Body.Close()
	if created.ID == "" {
		t.Fatalf("POST /api/runs: %d", res.StatusCode)
	}
	ctx := browser(t)
	err = chromedp.Do(ctx,
		chromedp.Navigate(fmt.Sprintf("%s/runs/%s", base, created.ID)),
		void(chromedp.Poll[bool](`typeof uPlot === "function" && document.querySelectorAll(".uplot canvas").length > 0 &&
			Number(document.querySelector('[data-testid="charts"]').dataset.points) > 2`, chromedp.WithPollingTimeout(60*time.Second))),
	)
	if err != nil {
		t.Fatalf("the installed binary's run page drew no chart: %v", err)
	}
}
