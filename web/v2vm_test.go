//go:build v2vm

// The cgroup v2 VM's part of the page tests (make test-v2): a run is
// recorded through the real API on the VM's cgroup v2 engine and exported,
// then imported on the host and drawn in Chromium, so the pressure charts
// are tested with what a v2 kernel really reported.
package web

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/limitlab/limitlab/internal/runner"
)

// pressureRun makes every lane wait for something: two spinners share
// one CPU, a writer is throttled, and a mem lane works near its limit.
const pressureRun = `{"name": "PSI on cgroup v2", "mode": "parallel", "duration": "90s", "lanes": [
  {"name": "spin a", "workload": {"kind": "spin", "seconds": 8}, "limits": {"cpuset-cpus": "0"}},
  {"name": "spin b", "workload": {"kind": "spin", "seconds": 8}, "limits": {"cpuset-cpus": "0"}},
  {"name": "writer", "workload": {"kind": "disk-write", "mb": 16, "bs": 1048576}, "limits": {"device-write-bps": "auto:2mb"}}]}`

// TestV2ExportAPressureRun runs in the VM: it records pressureRun and
// writes its export to $LIMITLAB_V2_OUT/pressure-run.json.
func TestV2ExportAPressureRun(t *testing.T) {
	out := os.Getenv("LIMITLAB_V2_OUT")
	if out == "" {
		t.Fatal("LIMITLAB_V2_OUT is not set: this test runs in the cgroup v2 VM (make test-v2)")
	}
	srv, m := newServer(t)
	if !m.Pool().Host().HasPressure() {
		t.Fatalf("the engine here has no PSI to record (cgroup v%s, %s)", m.Pool().Host().Cgroup, m.Pool().Host().StatsNote)
	}
	id := startRun(t, srv.URL, pressureRun)
	if v := waitEndedWithin(t, srv.URL, id, 4*time.Minute); v.State != runner.StateDone {
		t.Fatalf("run %s: %s", v.State, v.Error)
	}
	res, err := testClient.Get(srv.URL + "/api/runs/" + id + "/export?format=json")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("export: %d %s", res.StatusCode, b)
	}
	if err := os.WriteFile(filepath.Join(out, "pressure-run.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestV2BrowserChartsPressure runs on the host after the VM: it imports
// the VM's export and sees the three pressure charts drawn with what the
// v2 kernel reported.
func TestV2BrowserChartsPressure(t *testing.T) {
	file := os.Getenv("LIMITLAB_V2_EXPORT")
	if file == "" {
		t.Fatal("LIMITLAB_V2_EXPORT is not set: make test-v2 sets it to the run the VM exported")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := newServer(t)
	status, body := postJSON(t, srv.URL+"/api/runs/import", string(b))
	if status != http.StatusCreated {
		t.Fatalf("import: %d %s", status, body)
	}
	var created struct{ ID string }
	if err := json.Unmarshal(body, &created); err != nil || created.ID == "" {
		t.Fatalf("import: %s", body)
	}
	id := created.ID
	ctx := browser(t)
	err = chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/runs/"+id),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="results"][data-state="done"]`)),
		void(chromedp.Poll[bool](`Number(document.querySelector('[data-testid="charts"]').dataset.points) > 3`,
			chromedp.WithPollingTimeout(time.Minute))),
	)
	if err != nil {
		t.Fatal(err)
	}
	host := run(t, ctx, chromedp.Text(chromedp.CSS(`[data-testid="run-page"]`)))
	if !strings.Contains(host, "cgroup v2") {
		t.Errorf("the imported run's page does not say it ran on cgroup v2")
	}
	for _, key := range []string{"pressure", "io-pressure"} {
		n := run(t, ctx, chromedp.Evaluate[int](`Number((document.querySelector('[data-testid="chart-`+key+`"]') || {dataset: {}}).dataset.nonzero || -1)`))
		if n <= 0 {
			t.Errorf("chart-%s: %d values above zero, want the stalls the v2 kernel reported", key, n)
		}
	}
	if n := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="chart-memory-pressure"]').length`)); n != 1 {
		t.Errorf("%d memory pressure charts, want 1", n)
	}
	shot := run(t, ctx, chromedp.FullScreenshot(90))
	path := screenshotPath(t, "v2-pressure.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}
