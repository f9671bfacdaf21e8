package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/workshop"
)

// PublishBudget is the size a published run must keep under: the
// noisy-neighbour lab (40 s, 5 lanes at 250 ms) and a 12-lane run.
const PublishBudget = 1_500_000

// watcher records what a page asks of the network and what it reports as
// an error: a published page must ask nothing and report nothing.
type watcher struct {
	mu       sync.Mutex
	requests []string
	errors   []string
}

func watchPage(ctx context.Context) *watcher {
	w := &watcher{}
	_ = chromedp.Listen(ctx, func(ev any) {
		w.mu.Lock()
		defer w.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			w.requests = append(w.requests, e.Request.URL)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				w.errors = append(w.errors, fmt.Sprint("console: ", e.Args))
			}
		case *runtime.EventExceptionThrown:
			w.errors = append(w.errors, fmt.Sprintf("exception: %s %+v", e.ExceptionDetails.Text, e.ExceptionDetails.Exception))
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError {
				w.errors = append(w.errors, "log: "+e.Entry.Text)
			}
		}
	})
	return w
}

func (w *watcher) seen() ([]string, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.requests...), append([]string(nil), w.errors...)
}

// offline cuts the browser off the network and has it report requests and
// errors.
func offline() chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, _ *chromedp.Target) (chromedp.Void, error) {
		if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
			return chromedp.Void{}, err
		}
		all := []*network.Conditions{{Offline: true, DownloadThroughput: -1, UploadThroughput: -1}}
		if _, err := chromedp.Call(ctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{MatchedNetworkConditions: all}); err != nil {
			return chromedp.Void{}, err
		}
		if _, err := chromedp.Call(ctx, network.OverrideNetworkState, network.OverrideNetworkStateParams{Offline: true, DownloadThroughput: -1, UploadThroughput: -1}); err != nil {
			return chromedp.Void{}, err
		}
		if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
			return chromedp.Void{}, err
		}
		_, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{})
		return chromedp.Void{}, err
	}
}

// exportHTML fetches run id's published page and writes it to a file.
func exportHTML(t testing.TB, base, id string) (string, int) {
	t.Helper()
	res, err := http.Get(base + "/api/runs/" + id + "/export?format=html")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(res.Header.Get("Content-Disposition"), "limitlab-"+id+".html") {
		t.Fatalf("export html: %d %v %.300s", res.StatusCode, res.Header, b)
	}
	file := filepath.Join(t.TempDir(), "limitlab-"+id+".html")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return file, len(b)
}

// endedRun starts a run of spec and waits for its end.
func endedRun(t testing.TB, base string, m *workshop.Manager, spec string) string {
	t.Helper()
	id := startRun(t, base, spec)
	enginetest.WaitFor(t, 3*time.Minute, "the run's end", func() bool { v, ok := m.Archive().View(id); return ok && v.Ended })
	return id
}

// The noisy-neighbour lab, published as one file and opened from file://
// with the network off: it plays to its end, seeks to its middle phase,
// draws, shows its verdict and kernel view, and asks nothing of the
// network. Then its embed in a page of another origin, which the server
// lets frame it only when -embed-origins names that origin.
func TestBrowserReplaysAPublishedRun(t *testing.T) {
	// The tutorial frames the run at llURL, which the test moves from the
	// server that allows it to the one that does not.
	var mu sync.Mutex
	var llURL, runID string
	tutorial := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!DOCTYPE html><title>A post about noisy neighbours</title>
<p>What two busy neighbours do to a steady job:</p>
<iframe id="replay" src="%s/embed/runs/%s#phase=2" style="width:100%%;height:400px;border:0"></iframe>
<script>window.heights = []; addEventListener("message", (e) => { if (e.data && e.data.limitlab === "height") { window.heights.push(e.data.height); document.getElementById("replay").style.height = e.data.height + "px"; } });</script>`, llURL, runID)
	}))
	t.Cleanup(tutorial.Close)
	srv, m := newServerWith(t, func(d *Deps) { d.EmbedOrigins = []string{tutorial.URL} })
	// The same server without -embed-origins.
	closed := serve(t, m, nil)
	id := endedRun(t, srv.URL, m, `{"lab": "noisy-neighbour-cpu"}`)
	mu.Lock()
	llURL, runID = srv.URL, id
	mu.Unlock()
	file, size := exportHTML(t, srv.URL, id)
	t.Logf("the noisy-neighbour lab published: %d bytes", size)
	if size > PublishBudget {
		t.Errorf("the published lab is %d bytes, over its budget of %d", size, PublishBudget)
	}

	ctx := browser(t)
	w := watchPage(ctx)
	must(t, chromedp.Do(ctx, offline(),
		chromedp.Navigate("file://"+file),
		void(chromedp.Poll[bool](`document.body.dataset.replayEnded === "true" && Number(document.querySelector('[data-testid="charts"]').dataset.points) > 100`,
			chromedp.WithPollingTimeout(30*time.Second)))))
	first := run(t, ctx, chromedp.Evaluate[float64](`Number(document.body.dataset.drawnMs)`))
	t.Logf("time to first chart: %.0f ms", first)
	// Played from the start at 16×: the verdict is held back until the
	// end, as it was live.
	must(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`[data-testid="speed"]`), "16"),
		chromedp.Click(chromedp.CSS(`[data-testid="phase-1"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="play"]`)),
		void(chromedp.Poll[bool](`Number(document.body.dataset.replayAt) > 1 && document.body.dataset.replayEnded !== "true" &&
			document.querySelector('[data-testid="verdict"]').hidden && !document.querySelector('[data-testid="verdict-pending"]').hidden`,
			chromedp.WithPollingTimeout(10*time.Second))),
		void(chromedp.Poll[bool](`document.body.dataset.replayEnded === "true"`, chromedp.WithPollingTimeout(30*time.Second))),
		void(chromedp.Poll[bool](`!document.querySelector('[data-testid="verdict"]').hidden`, chromedp.WithPollingTimeout(5*time.Second))),
	))
	atEnd := run(t, ctx, chromedp.Evaluate[int](`Number(document.querySelector('[data-testid="charts"]').dataset.points)`))
	must(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="phase-2"]`)),
		void(chromedp.Poll[bool](`Math.abs(Number(document.body.dataset.replayAt) - 10) < 1.5`, chromedp.WithPollingTimeout(5*time.Second)))))
	mid := run(t, ctx, chromedp.Evaluate[[]int](`[Number(document.querySelector('[data-testid="charts"]').dataset.points),
		Number(document.querySelector('[data-testid="chart-cpu"]').dataset.nonzero),
		document.querySelector('[data-testid="verdict"]').hidden ? 0 : 1,
		document.querySelectorAll('[data-testid="kernel-view"] [data-testid="kernel-row"]').length,
		document.querySelectorAll('[data-testid="steps"] li').length]`))
	shot := run(t, ctx, chromedp.FullScreenshot(100))
	_ = os.WriteFile(screenshotPath(t, "published-replay.png"), shot, 0o644)
	if mid[0] == 0 || mid[0] >= atEnd || mid[1] == 0 {
		t.Errorf("at the middle phase the charts hold %d points of %d, the CPU chart %d values above zero", mid[0], atEnd, mid[1])
	}
	if mid[2] != 1 || mid[3] == 0 || mid[4] == 0 {
		t.Errorf("after the end, at the middle phase: verdict shown %d, %d kernel rows, %d steps", mid[2], mid[3], mid[4])
	}
	requests, errs := w.seen()
	for _, u := range requests {
		if u != "file://"+file {
			t.Errorf("the published page asked for %s", u)
		}
	}
	if len(errs) > 0 {
		t.Errorf("the published page reported errors: %q", errs)
	}

	// Embedded in another origin's page, allowed by -embed-origins: the
	// replay runs in the frame and tells the page its height.
	embedded := browser(t)
	must(t, chromedp.Do(embedded, chromedp.Navigate(tutorial.URL+"/"),
		void(chromedp.Poll[bool](`window.heights.some((h) => h > 600)`, chromedp.WithPollingTimeout(30*time.Second)))))
	// Without it, framing is refused: the frame never runs.
	mu.Lock()
	llURL = closed.URL
	mu.Unlock()
	must(t, chromedp.Do(embedded, chromedp.Navigate(tutorial.URL+"/")))
	time.Sleep(3 * time.Second)
	if hs := run(t, embedded, chromedp.Evaluate[[]int](`window.heights`)); len(hs) > 0 {
		t.Errorf("a server without -embed-origins was framed by %s: heights %v", tutorial.URL, hs)
	}
	res, err := http.Get(closed.URL + "/embed/runs/" + id)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if csp := res.Header.Get("Content-Security-Policy"); csp != "frame-ancestors 'self'" || res.Header.Get("X-Frame-Options") != "SAMEORIGIN" {
		t.Errorf("without -embed-origins the embed's framing headers are %q, %q", csp, res.Header.Get("X-Frame-Options"))
	}
}

// A lane named as markup exports and replays as text: nothing of it
// becomes an element or a script.
func TestBrowserPublishesAHostileLaneNameAsText(t *testing.T) {
	const hostile = `</script><img src=x onerror=alert(1)>`
	srv, m := newServer(t)
	id := endedRun(t, srv.URL, m, `{"name": "<b>markup</b>", "lanes": [{"name": "`+strings.ReplaceAll(hostile, `"`, `\"`)+`", "workload": {"kind": "spin", "seconds": 2}}]}`)
	file, _ := exportHTML(t, srv.URL, id)
	b, _ := os.ReadFile(file)
	if strings.Contains(string(b), "<img src=x") || strings.Contains(string(b), "<b>markup") {
		t.Errorf("the published page holds the lane's or the run's name as markup")
	}
	ctx := browser(t)
	w := watchPage(ctx)
	must(t, chromedp.Do(ctx, offline(), chromedp.Navigate("file://"+file),
		void(chromedp.Poll[bool](`document.body.dataset.replayEnded === "true"`, chromedp.WithPollingTimeout(30*time.Second)))))
	got := run(t, ctx, chromedp.Evaluate[[]any](`[document.querySelectorAll("img").length, document.querySelectorAll("main b").length,
		document.querySelector('[data-testid="chart-legend"]').textContent.includes(`+jsString(hostile)+`),
		document.querySelector('[data-testid="results-table"]').textContent.includes(`+jsString(hostile)+`), document.title]`))
	if got[0].(float64) != 0 || got[1].(float64) != 0 || got[2] != true || got[3] != true {
		t.Errorf("images %v, bold elements %v, the name in the legend %v and the results %v (title %q)", got[0], got[1], got[2], got[3], got[4])
	}
	if _, errs := w.seen(); len(errs) > 0 {
		t.Errorf("the page reported errors: %q", errs)
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A 12-lane run sampled every 100 ms is past the samples a page keeps
// whole: its ticks are merged outside the lanes' zoomed second, it keeps
// to the budget, and a lane's zoom still shows every sample of its second.
func TestBrowserReplaysATwelveLaneRun(t *testing.T) {
	srv, m := newServer(t)
	var lanes []string
	for i := range 12 {
		lanes = append(lanes, fmt.Sprintf(`{"name": "lane %d", "workload": {"kind": "spin", "seconds": 25}, "limits": {"cpus": "0.15"}}`, i+1))
	}
	id := endedRun(t, srv.URL, m, `{"name": "twelve lanes", "interval": "100ms", "lanes": [`+strings.Join(lanes, ",")+`]}`)
	file, size := exportHTML(t, srv.URL, id)
	t.Logf("a 12-lane run of 25 s at 100 ms published: %d bytes", size)
	if keep := os.Getenv("KEEP_PAGE"); keep != "" {
		b, _ := os.ReadFile(file)
		_ = os.WriteFile(keep, b, 0o644)
	}
	if size > PublishBudget {
		t.Errorf("the published 12-lane run is %d bytes, over its budget of %d", size, PublishBudget)
	}
	ctx := browser(t)
	w := watchPage(ctx)
	must(t, chromedp.Do(ctx, offline(), chromedp.Navigate("file://"+file),
		void(chromedp.Poll[bool](`document.body.dataset.replayEnded === "true" && document.body.dataset.drawnMs !== undefined`, chromedp.WithPollingTimeout(30*time.Second)))))
	t.Logf("time to first chart: %s ms", run(t, ctx, chromedp.Evaluate[string](`document.body.dataset.drawnMs`)))
	note := liveText(t, ctx, `[data-testid="thinned"]`)
	if !strings.Contains(note, "every 2 ticks") {
		t.Errorf("the page's note on what was merged: %q", note)
	}
	must(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="zoom-5"]`)),
		void(chromedp.Poll[bool](`document.querySelector('[data-testid="chart-cpu"]').dataset.spread !== undefined`, chromedp.WithPollingTimeout(5*time.Second)))))
	var spread []struct{ N int }
	_ = json.Unmarshal([]byte(run(t, ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="chart-cpu"]').dataset.spread`))), &spread)
	if len(spread) != 12 || spread[5].N < 8 {
		t.Errorf("lane 6's zoomed second holds %+v samples, want about 10 at 100 ms", spread)
	}
	if requests, errs := w.seen(); len(requests) != 1 || len(errs) > 0 {
		t.Errorf("requests %q, errors %q", requests, errs)
	}
}

// A tutorial's "now try --cpus 0.25" as one link: the lab page opens with
// the link's limits and its Run button runs them; the embedded lab's Run
// button opens the run in a new tab.
func TestBrowserRunsALabLink(t *testing.T) {
	srv, m := newServer(t)
	ctx := browser(t)
	must(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/labs/noisy-neighbour-cpu?lanes="+url.QueryEscape("burner 1:cpus=0.25")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="link-changes"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="run-lab"]`)),
		waitPath("/runs/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="run-page"]`))))
	id := strings.TrimPrefix(run(t, ctx, chromedp.Evaluate[string](`location.pathname`)), "/runs/")
	// Stopped as its participant, from the page.
	stop := func(id string) {
		status := run(t, ctx, chromedp.Evaluate[int](`fetch("/api/runs/`+id+`/stop", {method: "POST"}).then((r) => r.status)`, chromedp.EvalAwaitPromise))
		if status != http.StatusAccepted {
			t.Errorf("stop %s: %d", id, status)
		}
		enginetest.WaitFor(t, time.Minute, "the run's end", func() bool { v, ok := m.Archive().View(id); return ok && v.Ended })
	}
	stop(id)
	v, ok := m.Archive().View(id)
	if !ok || v.Spec.Lanes[1].Limits.CPUs != "0.25" || v.Lab != "" {
		t.Errorf("the link's run: %v %+v, lab %q", ok, v.Spec.Lanes[1].Limits, v.Lab)
	}

	must(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/embed/labs/noisy-neighbour-cpu"),
		chromedp.Click(chromedp.CSS(`[data-testid="run-lab"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="run-opened"]`))))
	href := run(t, ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="run-opened"]').getAttribute("href")`))
	if !strings.HasPrefix(href, "/runs/") {
		t.Fatalf("the embedded lab's run link: %q", href)
	}
	stop(strings.TrimPrefix(href, "/runs/"))
	if v, _ := m.Archive().View(strings.TrimPrefix(href, "/runs/")); v.Lab != "noisy-neighbour-cpu" {
		t.Errorf("the embedded lab ran %q", v.Lab)
	}
}
