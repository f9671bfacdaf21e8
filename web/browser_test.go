package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/limitlab/limitlab/internal/enginetest"
)

// chromiumPath is Debian's Chromium; LIMITLAB_CHROMIUM overrides it. No
// test downloads a browser of its own.
func chromiumPath(t testing.TB) string {
	t.Helper()
	p := os.Getenv("LIMITLAB_CHROMIUM")
	if p == "" {
		p = "/usr/bin/chromium"
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("no Chromium at %s: install it with `apt-get install -y chromium` (or set LIMITLAB_CHROMIUM)", p)
	}
	return p
}

// browser starts headless Chromium with a fresh profile.
func browser(t testing.TB) context.Context {
	t.Helper()
	if _, err := os.Stat("../static/vendor/uPlot.iife.min.js"); err != nil {
		t.Fatal("static/vendor has no uPlot: it is in the repository; `make assets-update` takes it from npm again")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1600),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return ctx
}

// screenshotPath is where the browser tests save what they saw:
// LIMITLAB_SCREENSHOTS if set, else the test's temporary directory.
func screenshotPath(t testing.TB, name string) string {
	dir := os.Getenv("LIMITLAB_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	return filepath.Join(dir, name)
}

// void drops an action's value so it can join a chromedp.Do sequence.
func void[T any](a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := a(ctx, t)
		return chromedp.Void{}, err
	}
}

// run runs one action that returns a value, failing the test on error.
func run[T any](t testing.TB, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestBrowserRunsAnExperiment(t *testing.T) {
	srv, m := newServer(t)
	ctx := browser(t)

	err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="builder-memory-oom"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="builder-memory-oom"]`)),
		// The lab's three lanes are in the builder's form.
		chromedp.WaitVisible(chromedp.CSS(`fieldset.lane[data-lane="2"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="run"]`)),
		waitPath("/runs/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="run-page"]`)),
		// Charts fill while it runs...
		void(chromedp.Poll[bool](`Number(document.querySelector('[data-testid="charts"]').dataset.points) > 3`,
			chromedp.WithPollingTimeout(time.Minute))),
		// ...and the results table arrives when it ends.
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="results"][data-state="done"]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	points := run(t, ctx, chromedp.AttributeValue(chromedp.CSS(`[data-testid="charts"]`), "data-points"))
	rows := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('tr[data-testid="lane-row"]').length`))
	oomCell := liveText(t, ctx, `tr[data-lane="memory=64m"] td.oom`)
	dockerRun := liveText(t, ctx, `tr[data-lane="512m, reservation 128m"] td.cmd code`)
	oomEvent := liveText(t, ctx, `[data-testid="events"]`)
	// The kernel view: the 512m lane's --memory, read back from its
	// cgroup, with the other version's file beside it.
	kernel := run(t, ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('table[data-lane="512m, reservation 128m"] tr[data-flag="--memory"]')).map((r) => r.dataset.file + " " + r.dataset.holds + " " + r.textContent)`))
	pressureCharts := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid$="pressure"]').length`))
	// The charts with nothing to draw, folded into one line that names
	// them (each name's title: what would fill it), and not drawn.
	empty := run(t, ctx, chromedp.Evaluate[[]string](`(() => { const l = document.querySelector('[data-testid="empty-charts"]');
		const drawn = Array.from(document.querySelectorAll('.chart.empty')).filter((c) => c.offsetParent !== null).map((c) => "drawn " + c.dataset.testid);
		return [l.hidden ? "hidden" : "shown", ...drawn, ...Array.from(l.querySelectorAll('.folded')).map((s) => "chart-" + s.dataset.key + ": " + s.title)]; })()`))
	// One legend for the page, none under the lanes' charts; hovering the
	// memory chart shows its lanes' values at that instant in a tooltip.
	legends := run(t, ctx, chromedp.Evaluate[[]int](`[document.querySelectorAll('[data-testid="chart-legend"]').length, document.querySelectorAll('.chart:not(.host-band) .u-legend').length, document.querySelectorAll('[data-testid="chart-legend"] .legend-lane').length]`))
	box := run(t, ctx, chromedp.Evaluate[[]float64](`(() => { const r = document.querySelector('[data-testid="chart-mem"] .u-over').getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()`))
	if err := chromedp.Do(ctx,
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, box[0]-5, box[1]),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, box[0], box[1]),
		void(chromedp.Poll[bool](`!document.querySelector('[data-testid="tip-mem"]').hidden`, chromedp.WithPollingTimeout(10*time.Second))),
	); err != nil {
		t.Fatalf("hovering the memory chart: %v", err)
	}
	tip := liveText(t, ctx, `[data-testid="tip-mem"]`)
	shot := run(t, ctx, chromedp.FullScreenshot(100))
	if legends[0] != 1 || legends[1] != 0 || legends[2] != 3 {
		t.Errorf("%d page legends with %d lanes, %d legends under lane charts; want one with 3, and none", legends[0], legends[2], legends[1])
	}
	if !strings.Contains(tip, " s") || !(strings.Contains(tip, "memory=64m: ") || strings.Contains(tip, "512m, reservation 128m: ")) {
		t.Errorf("the memory chart's tooltip says %q, want the instant and the lanes' values", tip)
	}

	// memory-oom does no block IO: its IO charts are folded to a line
	// saying what would fill them. Its memory chart, what it studies, is
	// drawn; its pids, under no limit of its own and a few processes, are
	// folded as not notable, and so is its CPU if it used little.
	folded := strings.Join(empty, "\n")
	if empty[0] != "shown" || strings.Contains(folded, "drawn ") || !strings.Contains(folded, "chart-io-write: No block IO written: a disk-write lane") ||
		strings.Contains(folded, "chart-cpu: No CPU used") || strings.Contains(folded, "chart-mem:") || !strings.Contains(folded, "chart-pids: At most") {
		t.Errorf("folded charts: %q", empty)
	}
	if n, _ := strconv.Atoi(points.Value); n < 4 {
		t.Errorf("charts hold %q points", points.Value)
	}
	if rows != 3 {
		t.Errorf("%d lane rows, want 3", rows)
	}
	file, other := "memory.limit_in_bytes", "memory.max = 536870912"
	if m.Pool().Host().CgroupV2() {
		file, other = "memory.max", "memory.limit_in_bytes = 536870912"
	}
	if len(kernel) != 1 || !strings.HasPrefix(kernel[0], file+" yes") || !strings.Contains(kernel[0], "536870912") || !strings.Contains(kernel[0], other) {
		t.Errorf("kernel view of --memory 512m: %q, want %s read back as 536870912, and the other version's %s beside it", kernel, file, other)
	}
	if pressureCharts != 0 && !m.Pool().Host().HasPressure() {
		t.Errorf("%d pressure charts on cgroup v1, which has no PSI", pressureCharts)
	}
	if !strings.Contains(oomEvent, "memory=64m: killed by the kernel's OOM killer") {
		t.Errorf("engine events %q lack the OOM kill", oomEvent)
	}
	if strings.TrimSpace(oomCell) != "yes" {
		t.Errorf("OOM cell of the 64m lane = %q, want yes", oomCell)
	}
	if !strings.Contains(dockerRun, "--memory 512m") || !strings.Contains(dockerRun, "--memory-reservation 128m") {
		t.Errorf("docker run of the 512m lane = %q", dockerRun)
	}
	path := screenshotPath(t, "run.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

func TestBrowserShowsFieldErrors(t *testing.T) {
	srv, _ := newServer(t)
	ctx := browser(t)
	lane0 := `fieldset.lane[data-lane="0"] `
	err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(lane0+`input[data-field="cpus"]`)),
		chromedp.SetValue(chromedp.CSS(lane0+`input[data-field="cpus"]`), "99"),
		chromedp.SetValue(chromedp.CSS(lane0+`input[data-field="memory"]`), "1k"),
		chromedp.SetValue(chromedp.CSS(`[data-testid="repeat"]`), "11"),
		chromedp.Click(chromedp.CSS(`[data-testid="run"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-errors li`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	summary := run(t, ctx, chromedp.Text(chromedp.CSS(`#run-errors`)))
	invalid := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('fieldset.lane[data-lane="0"] input.invalid').length`))
	for _, want := range []string{"lane 1 · cpus: Range of CPUs", "lane 1 · memory: Minimum memory limit allowed is 6MB", "repeat: want 1 to 10 runs, got 11"} {
		if !strings.Contains(summary, want) {
			t.Errorf("error summary %q lacks %q", summary, want)
		}
	}
	if invalid != 2 {
		t.Errorf("%d inputs of the lane marked invalid, want 2", invalid)
	}
}

// TestBrowserRunsALabToItsVerdict runs a lab from the home page to its
// verdict: the page shows the model's prediction and the lab's closing
// explanation. Nothing here is measured (the verdict's figures are the
// lab tests'), so nothing is measured again.
func TestBrowserRunsALabToItsVerdict(t *testing.T) {
	srv, _ := newServer(t)
	ctx := browser(t)
	err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.Click(chromedp.CSS(`[data-testid="lab-shares-spare-cpu"]`)),
		waitPath("/labs/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="lab-page"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="run-lab"]`)),
		waitPath("/runs/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="run-page"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="verdict"]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	explanation := liveText(t, ctx, `[data-testid="verdict-explanation"]`)
	after := liveText(t, ctx, `[data-testid="lab-after"]`)
	// A CPU lab draws its CPU and throttling charts first, and folds those
	// with nothing to draw into one line.
	order := run(t, ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('[data-testid="charts"] .chart:not(.host-band)')).map((c) => c.dataset.testid)`))
	folded := liveText(t, ctx, `[data-testid="empty-charts"]`)
	drawn := run(t, ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('[data-testid="charts"] .chart:not(.host-band)')).filter((c) => c.offsetParent !== null).map((c) => c.dataset.testid)`))
	if len(order) < 2 || order[0] != "chart-cpu" || order[1] != "chart-throttled" {
		t.Errorf("charts in the order %q, want the CPU and throttling charts first", order)
	}
	// Its lanes set no memory, pids or block IO limit and do nothing
	// notable there: those charts are folded, named on the line.
	for _, c := range drawn {
		if strings.HasPrefix(c, "chart-mem") || strings.HasPrefix(c, "chart-io") || c == "chart-iops" || c == "chart-pids" {
			t.Errorf("the chart %s of an unlimited, idle resource is drawn (drawn: %q)", c, drawn)
		}
	}
	if len(drawn) == 0 || drawn[0] != "chart-cpu" || !strings.Contains(folded, "Nothing notable, not what this run studies: Memory") {
		t.Errorf("drawn %q, folded %q", drawn, folded)
	}
	// A click on a folded name draws its chart.
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`[data-testid="empty-charts"] .folded[data-key="mem"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chart-mem"]`)),
	); err != nil {
		t.Errorf("unfolding the memory chart: %v", err)
	}
	// The lab sets no quota: its throttling charts have nothing to draw.
	if !strings.HasPrefix(folded, "Nothing to draw yet: ") || !strings.Contains(folded, "CFS throttled time") || strings.Contains(folded, "Workload throughput") {
		t.Errorf("the folded line %q", folded)
	}
	if !strings.Contains(explanation, "The CPU allotment model predicts CPU ratios of 1.00 : 1.00") {
		t.Errorf("verdict explanation %q", explanation)
	}
	if !strings.Contains(after, "shares act only when CPU is scarce") {
		t.Errorf("lab's closing explanation %q", after)
	}
}

func TestBrowserChangesLimitsLive(t *testing.T) {
	srv, _ := newServer(t)
	ctx := browser(t)
	// Only the participant who started a run may change it: the browser
	// starts it, with its own cookie.
	id := browserStart(t, ctx, srv.URL, `{"name": "live", "duration": "60s",
	  "lanes": [{"name": "spinner", "workload": {"kind": "spin", "seconds": 6}, "limits": {"cpus": "1"}}]}`)
	err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/runs/"+id),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="control-0"] input[data-field="cpus"]`)),
		chromedp.SetValue(chromedp.CSS(`[data-testid="control-0"] input[data-field="cpus"]`), "0.25"),
		chromedp.Click(chromedp.CSS(`[data-testid="apply-0"]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	row := liveText(t, ctx, `[data-testid="change-row"]`)
	if !strings.Contains(row, "cpus 0.25") || !strings.Contains(row, "docker update --cpus 0.25") {
		t.Errorf("change row %q", row)
	}
}

// liveText waits for the first element matching selector to hold text and
// returns that text. A live run's results fragment is replaced whenever
// its view moves on, so a node found by one query may be detached by the
// next (chromedp then reads it as empty): the text is read in the page, by
// one expression at each poll.
func liveText(t testing.TB, ctx context.Context, selector string) string {
	t.Helper()
	text := `(document.querySelector(` + strconv.Quote(selector) + `) || {textContent: ""}).textContent`
	if err := chromedp.Do(ctx, void(chromedp.Poll[bool](text+` !== ""`, chromedp.WithPollingTimeout(30*time.Second)))); err != nil {
		t.Fatalf("nothing in %s: %v", selector, err)
	}
	return run(t, ctx, chromedp.Evaluate[string](text))
}

// waitPath waits until the page's location is under prefix and its
// document has loaded: after a click that navigates, a query begun on the
// old document would lose its nodes to the new one. It asks from here, a
// tenth of a second apart, since a poll inside the page dies with the
// page it began in.
func waitPath(prefix string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tgt *chromedp.Target) (chromedp.Void, error) {
		check := chromedp.Evaluate[bool](`location.pathname.startsWith(` + strconv.Quote(prefix) + `) && document.readyState === "complete"`)
		deadline := time.Now().Add(30 * time.Second)
		for {
			ok, err := check(ctx, tgt)
			if err == nil && ok {
				return chromedp.Void{}, nil
			}
			if time.Now().After(deadline) {
				return chromedp.Void{}, fmt.Errorf("the page did not reach %s within 30 s (last: %v)", prefix, err)
			}
			select {
			case <-ctx.Done():
				return chromedp.Void{}, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// browserStart starts a run from the browser, as its participant, and
// returns the run's id.
func browserStart(t testing.TB, ctx context.Context, base, spec string) string {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Navigate(base+"/runs")); err != nil {
		t.Fatal(err)
	}
	js := `fetch("/api/runs", {method: "POST", headers: {"Content-Type": "application/json"}, body: ` + strconv.Quote(spec) +
		`}).then(async (r) => { const b = await r.json(); if (r.status !== 201) throw new Error(JSON.stringify(b)); return b.id; })`
	return run(t, ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
}

// A run beside two busy loops outside Docker: its page shows the host
// band, the host's load in the results, and the verdict inconclusive.
func TestBrowserShowsANoisyHost(t *testing.T) {
	srv, m := newServer(t)
	_, stop := enginetest.BusyLoops(t, 2)
	// Two lanes that share the host unevenly: the model gives the one
	// held at half a CPU a third of the other's CPU; a core taken by
	// other work would leave them even.
	status, b := postJSON(t, srv.URL+"/api/runs", `{"name": "beside busy loops", "duration": "60s", "lanes": [
	  {"name": "two threads", "workload": {"kind": "spin", "threads": 2, "seconds": 4}},
	  {"name": "half a CPU", "workload": {"kind": "spin", "seconds": 4}, "limits": {"cpus": "0.5"}}]}`)
	if status != http.StatusCreated {
		t.Fatalf("%d %s", status, b)
	}
	var created struct{ ID string }
	_ = json.Unmarshal(b, &created)
	enginetest.WaitFor(t, 2*time.Minute, "the run's end", func() bool { v, ok := m.Archive().View(created.ID); return ok && v.Ended })
	stop()
	v, _ := m.Archive().View(created.ID)
	if v.Verdict == nil || !v.Verdict.Inconclusive {
		t.Fatalf("beside two busy loops the verdict is %+v (noise %+v)", v.Verdict, v.Noise)
	}
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/runs/"+created.ID),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="verdict"]`)),
		void(chromedp.Poll[bool](`Number((document.querySelector('[data-testid="chart-host"]') || {dataset: {}}).dataset.points || 0) > 4`,
			chromedp.WithPollingTimeout(30*time.Second)))); err != nil {
		t.Fatal(err)
	}
	if got := run(t, ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="verdict"]').dataset.inconclusive`)); got != "yes" {
		t.Errorf("the verdict's data-inconclusive is %q", got)
	}
	if h := liveText(t, ctx, `[data-testid="verdict"] h3`); !strings.Contains(h, "inconclusive") {
		t.Errorf("the verdict's heading %q", h)
	}
	if n := liveText(t, ctx, `[data-testid="host-noise"]`); !strings.Contains(n, "busy before the run") || !strings.Contains(n, "cores of other work") {
		t.Errorf("the host's load in the results: %q", n)
	}
	shot := run(t, ctx, chromedp.FullScreenshot(80))
	_ = os.WriteFile(screenshotPath(t, "noisy-host.jpg"), shot, 0o644)
}
