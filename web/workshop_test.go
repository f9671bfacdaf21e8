package web

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workshop"
)

const presenterToken = "s3cret-presenter"

func withPresenter(d *Deps) { d.PresenterToken = presenterToken }

// startRun posts a spec as the test client's participant and returns the
// run's id.
func startRun(t testing.TB, base, spec string) string {
	t.Helper()
	status, body := postJSON(t, base+"/api/runs", spec)
	if status != http.StatusCreated {
		t.Fatalf("POST /api/runs: %d %s", status, body)
	}
	var created struct{ ID string }
	_ = json.Unmarshal(body, &created)
	return created.ID
}

func waitEnded(t testing.TB, base, id string) runner.RunView {
	t.Helper()
	return waitEndedWithin(t, base, id, time.Minute)
}

func waitEndedWithin(t testing.TB, base, id string, within time.Duration) runner.RunView {
	t.Helper()
	var v runner.RunView
	enginetest.WaitFor(t, within, "run "+id+" to end", func() bool {
		v = runner.RunView{}
		getJSON(t, base+"/api/runs/"+id, &v)
		return v.State.Ended()
	})
	return v
}

func call(t testing.TB, c *http.Client, method, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	req.Header.Set("Content-Type", "application/json") // a script's call, without Origin
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

const tinyRun = `{"name": "tiny", "duration": "20s", "lanes": [
  {"name": "half", "workload": {"kind": "spin", "seconds": 1.5}, "limits": {"cpus": "0.5"}},
  {"name": "tenth", "workload": {"kind": "spin", "seconds": 1.5}, "limits": {"cpus": "0.1"}}]}`

// TestPresenterActionsNeedTheToken: featuring, clearing the queue and
// stopping another participant's run are refused without the token, and
// work with it.
func TestPresenterActionsNeedTheToken(t *testing.T) {
	srv, _ := newServerWith(t, withPresenter)
	id := startRun(t, srv.URL, `{"name": "long", "duration": "60s", "lanes": [{"workload": {"kind": "spin", "seconds": 30}, "limits": {"cpus": "0.1"}}]}`)
	jar, _ := cookiejar.New(nil)
	other := &http.Client{Jar: jar} // another browser: another participant

	for _, token := range []string{"", "wrong"} {
		for _, p := range []string{"/api/runs/" + id + "/feature", "/api/queue/clear"} {
			if status, body := call(t, other, "POST", srv.URL+p, token); status != http.StatusUnauthorized || !strings.Contains(body, "presenter only") {
				t.Errorf("POST %s with token %q: %d %s, want 401", p, token, status, body)
			}
		}
		if status, body := call(t, other, "POST", srv.URL+"/api/runs/"+id+"/stop", token); status != http.StatusForbidden {
			t.Errorf("another participant stopping the run with token %q: %d %s, want 403", token, status, body)
		}
	}
	if status, _ := call(t, other, "GET", srv.URL+"/api/featured", ""); status != http.StatusNotFound {
		t.Errorf("featured before any feature: %d, want 404", status)
	}
	if status, body := call(t, other, "POST", srv.URL+"/api/runs/"+id+"/feature", presenterToken); status != http.StatusOK {
		t.Errorf("feature with the token: %d %s", status, body)
	}
	var featured runner.RunView
	if getJSON(t, srv.URL+"/api/featured", &featured); featured.ID != id {
		t.Errorf("featured %q, want %q", featured.ID, id)
	}
	if status, body := call(t, other, "POST", srv.URL+"/api/queue/clear", presenterToken); status != http.StatusOK || !strings.Contains(body, `"cleared": 0`) {
		t.Errorf("clear the queue with the token: %d %s", status, body)
	}
	// Another participant's run waits behind the long one (one run at a
	// time); clearing the queue ends it, unstarted, and says why.
	req, _ := http.NewRequest("POST", srv.URL+"/api/runs", strings.NewReader(`{"name": "waiting", "lanes": [{"workload": {"kind": "spin", "seconds": 1}, "limits": {"cpus": "0.1"}}]}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := other.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var queued struct{ ID string }
	_ = json.NewDecoder(res.Body).Decode(&queued)
	res.Body.Close()
	if status, body := call(t, other, "POST", srv.URL+"/api/queue/clear", presenterToken); status != http.StatusOK || !strings.Contains(body, `"cleared": 1`) {
		t.Errorf("clear a queue of one: %d %s", status, body)
	}
	if v := waitEnded(t, srv.URL, queued.ID); v.State != runner.StateStopped || !strings.Contains(v.Error, "the presenter cleared the queue") || v.StartedAt != (time.Time{}) {
		t.Errorf("the cleared run: %s %q, started %v", v.State, v.Error, v.StartedAt)
	}
	if status, body := call(t, other, "POST", srv.URL+"/api/runs/"+id+"/stop", presenterToken); status != http.StatusAccepted {
		t.Errorf("the presenter stopping the run: %d %s", status, body)
	}
	if v := waitEnded(t, srv.URL, id); v.State != runner.StateStopped {
		t.Errorf("after the presenter's stop: %s", v.State)
	}
	if n := enginetest.Labelled(t, id); n != 0 {
		t.Errorf("%d containers of the stopped run remain", n)
	}

	// Without a token at start-up, presenter calls are off altogether.
	off, _ := newServer(t)
	if status, body := call(t, other, "POST", off.URL+"/api/queue/clear", "anything"); status != http.StatusForbidden || !strings.Contains(body, "without a presenter token") {
		t.Errorf("presenter call on a server without a token: %d %s", status, body)
	}
}

// TestQuotaRefusalNamesTheLimit: over the API, a refusal says which limit
// and by how much, and starts nothing.
func TestQuotaRefusalNamesTheLimit(t *testing.T) {
	srv, _ := newServerWith(t, nil, func(o *workshop.Options) {
		o.Quotas = &workshop.Quotas{Participant: workshop.Limits{Runs: 1}, Host: workshop.Limits{Memory: 64 << 20}}
	})
	status, body := postJSON(t, srv.URL+"/api/runs", `{"name": "big", "lanes": [
	  {"workload": {"kind": "spin", "seconds": 1}, "limits": {"memory": "48m"}},
	  {"workload": {"kind": "spin", "seconds": 1}, "limits": {"memory": "48m"}}]}`)
	if status != http.StatusForbidden || !strings.Contains(string(body), "host limit on memory exceeded by 32MiB") {
		t.Errorf("over the host's memory quota: %d %s", status, body)
	}
	status, body = postJSON(t, srv.URL+"/api/runs", `{"name": "no limit", "lanes": [{"workload": {"kind": "spin", "seconds": 1}}]}`)
	if status != http.StatusForbidden || !strings.Contains(string(body), `"lane": 0`) || !strings.Contains(string(body), "each lane needs one") {
		t.Errorf("a lane without --memory under a memory quota: %d %s", status, body)
	}
	id := startRun(t, srv.URL, `{"name": "first", "duration": "30s", "lanes": [{"workload": {"kind": "spin", "seconds": 20}, "limits": {"cpus": "0.1", "memory": "16m"}}]}`)
	status, body = postJSON(t, srv.URL+"/api/runs", `{"name": "second", "lanes": [{"workload": {"kind": "spin", "seconds": 1}, "limits": {"memory": "16m"}}]}`)
	if status != http.StatusForbidden || !strings.Contains(string(body), "participant limit on runs exceeded by 1 runs") {
		t.Errorf("a second run of one participant: %d %s", status, body)
	}
	var list struct{ Runs []runner.RunView }
	getJSON(t, srv.URL+"/api/runs", &list)
	if len(list.Runs) != 1 || list.Runs[0].ID != id {
		t.Errorf("refused runs were recorded: %d runs", len(list.Runs))
	}
	postJSON(t, srv.URL+"/api/runs/"+id+"/stop", "")
	waitEnded(t, srv.URL, id)
	if n := enginetest.Labelled(t, id); n != 0 {
		t.Errorf("%d containers of the stopped run remain", n)
	}
}

// TestExportImportGivesTheSameResultsTable: JSON out, JSON in, and the
// results table renders the same; the CSV has a row per sample per lane.
func TestExportImportGivesTheSameResultsTable(t *testing.T) {
	srv, _ := newServer(t)
	id := startRun(t, srv.URL, tinyRun)
	if v := waitEnded(t, srv.URL, id); v.State != runner.StateDone {
		t.Fatalf("run: %s %s", v.State, v.Error)
	}
	get := func(path string) (string, http.Header) {
		res, err := testClient.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, res.StatusCode, b)
		}
		return string(b), res.Header
	}
	file, hdr := get("/api/runs/" + id + "/export?format=json")
	if !strings.Contains(hdr.Get("Content-Disposition"), "attachment") {
		t.Errorf("export headers %v", hdr)
	}
	status, body := postJSON(t, srv.URL+"/api/runs/import", file)
	if status != http.StatusCreated {
		t.Fatalf("import: %d %s", status, body)
	}
	var created struct{ ID string }
	_ = json.Unmarshal(body, &created)
	orig, _ := get("/runs/" + id + "/results")
	imp, _ := get("/runs/" + created.ID + "/results")
	if orig != imp || !strings.Contains(orig, "half") {
		t.Errorf("results table differs after export and import:\n%s\n---\n%s", orig, imp)
	}
	page, _ := get("/runs/" + created.ID)
	if !strings.Contains(page, `data-testid="imported"`) {
		t.Error("the imported run's page does not say it was imported")
	}

	text, hdr := get("/api/runs/" + id + "/export?format=csv")
	rows, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil || !strings.HasPrefix(hdr.Get("Content-Type"), "text/csv") {
		t.Fatalf("csv: %v %v", err, hdr)
	}
	if rows[0][0] != "run" || rows[0][5] != "cpu_cores" {
		t.Errorf("csv header %v", rows[0])
	}
	lanes := map[string]int{}
	for _, r := range rows[1:] {
		lanes[r[2]]++
	}
	if lanes["half"] < 4 || lanes["tenth"] < 4 || lanes["host"] < 4 || len(lanes) != 3 {
		t.Errorf("csv rows per lane %v, want samples of both lanes and of the host's load", lanes)
	}

	for _, bad := range []string{`{"format": "other"}`, `not json`, `{"format": "limitlab-run", "version": 1, "run": {"spec": {"lanes": [{"workload": {"kind": "nope"}}]}}}`} {
		if status, body := postJSON(t, srv.URL+"/api/runs/import", bad); status != http.StatusBadRequest || !bytes.Contains(body, []byte("import")) {
			t.Errorf("import of %s: %d %s", bad, status, body)
		}
	}
}

// TestHistoryAndCompare: the history lists runs newest first with their
// key result, filtered by lab, and two runs compare side by side.
func TestHistoryAndCompare(t *testing.T) {
	srv, _ := newServer(t)
	a := startRun(t, srv.URL, tinyRun)
	waitEnded(t, srv.URL, a)
	b := startRun(t, srv.URL, strings.Replace(tinyRun, `"tiny"`, `"tiny again"`, 1))
	waitEnded(t, srv.URL, b)
	res, err := testClient.Get(srv.URL + "/runs")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	ib, ia := bytes.Index(page, []byte(`data-run-id="`+b+`"`)), bytes.Index(page, []byte(`data-run-id="`+a+`"`))
	if ib < 0 || ia < 0 || ib > ia {
		t.Errorf("history: want %s listed before %s", b, a)
	}
	if !bytes.Contains(page, []byte("half: ")) {
		t.Error("history shows no key result")
	}
	var list struct{ Runs []runner.RunView }
	getJSON(t, srv.URL+"/api/runs?lab=cpus-vs-shares", &list)
	if len(list.Runs) != 0 {
		t.Errorf("lab filter kept %d custom runs", len(list.Runs))
	}
	res, err = testClient.Get(srv.URL + "/compare?a=" + a + "&b=" + b)
	if err != nil {
		t.Fatal(err)
	}
	page, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || bytes.Count(page, []byte(`data-testid="compare-row"`)) != 2 || !bytes.Contains(page, []byte("tiny again")) {
		t.Errorf("compare: %d\n%s", res.StatusCode, page)
	}
}

// TestBrowserLiveFollowsTheFeaturedRun: /live shows the featured run and
// moves to the next one the presenter features, without a reload; the
// queued participant sees their position.
func TestBrowserLiveFollowsTheFeaturedRun(t *testing.T) {
	srv, _ := newServerWith(t, withPresenter)
	a := startRun(t, srv.URL, tinyRun)
	waitEnded(t, srv.URL, a)
	b := startRun(t, srv.URL, `{"name": "second", "duration": "30s", "lanes": [{"workload": {"kind": "spin", "seconds": 8}, "limits": {"cpus": "0.2"}}]}`)
	feature := func(id string) {
		if status, body := call(t, testClient, "POST", srv.URL+"/api/runs/"+id+"/feature", presenterToken); status != 200 {
			t.Fatalf("feature: %d %s", status, body)
		}
	}
	ctx := browser(t)
	frameRun := `(document.getElementById("live-frame").dataset.runId || "")`
	err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/live"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="live-status"]`)),
		void(chromedp.Evaluate[bool](`window.sameDocument = true`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	feature(a)
	if err := chromedp.Do(ctx, void(chromedp.Poll[bool](frameRun+` === "`+a+`"`, chromedp.WithPollingTimeout(20*time.Second)))); err != nil {
		t.Fatalf("/live did not show the first featured run: %v", err)
	}
	feature(b)
	if err := chromedp.Do(ctx, void(chromedp.Poll[bool](frameRun+` === "`+b+`"`, chromedp.WithPollingTimeout(20*time.Second)))); err != nil {
		t.Fatalf("/live did not move to the next featured run: %v", err)
	}
	if same := run(t, ctx, chromedp.Evaluate[bool](`window.sameDocument === true`)); !same {
		t.Error("/live reloaded to follow the featured run")
	}
	fork := run(t, ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="live-fork"]').getAttribute("href")`))
	if fork != "/?from="+b {
		t.Errorf("fork link %q", fork)
	}
	// The featured run's charts draw inside /live.
	err = chromedp.Do(ctx, void(chromedp.Poll[bool](
		`(() => { const d = document.getElementById("live-frame").contentDocument; const c = d && d.querySelector('[data-testid="charts"]'); return !!c && Number(c.dataset.points) > 2; })()`,
		chromedp.WithPollingTimeout(30*time.Second))))
	if err != nil {
		t.Errorf("no charts of the featured run in /live: %v", err)
	}
}

// TestBrowserShowsItsQueuePosition: a participant whose run waits behind
// another's sees its place in the queue, live, and then its run start.
func TestBrowserShowsItsQueuePosition(t *testing.T) {
	srv, _ := newServerWith(t, nil, func(o *workshop.Options) { o.MaxRunning = 1 })
	first := startRun(t, srv.URL, `{"name": "first", "duration": "60s", "lanes": [{"workload": {"kind": "spin", "seconds": 40}, "limits": {"cpus": "0.1"}}]}`)
	ctx := browser(t)
	mine := browserStart(t, ctx, srv.URL, `{"name": "mine", "duration": "30s", "lanes": [{"workload": {"kind": "spin", "seconds": 2}, "limits": {"cpus": "0.1"}}]}`)
	err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/runs/"+mine),
		void(chromedp.Poll[bool](`document.querySelector('[data-testid="queue-position"]').textContent.includes("you are next")`,
			chromedp.WithPollingTimeout(20*time.Second))),
	)
	if err != nil {
		t.Fatalf("no queue position on the waiting run's page: %v", err)
	}
	if status, body := call(t, testClient, "POST", srv.URL+"/api/runs/"+first+"/stop", ""); status != http.StatusAccepted {
		t.Fatalf("stop the first run: %d %s", status, body)
	}
	err = chromedp.Do(ctx, void(chromedp.Poll[bool](
		`document.querySelector('[data-testid="queue-position"]').hidden && ["running", "done"].includes(document.querySelector('[data-testid="state"]').textContent)`,
		chromedp.WithPollingTimeout(30*time.Second))))
	if err != nil {
		t.Fatalf("the waiting run did not start once the host was free: %v", err)
	}

	// A chart downloads as a PNG: catch the download link the button
	// makes, and read the image it points at.
	err = chromedp.Do(ctx,
		void(chromedp.Poll[bool](`Number(document.querySelector('[data-testid="charts"]').dataset.points) > 2`, chromedp.WithPollingTimeout(30*time.Second))),
		void(chromedp.Evaluate[bool](`HTMLAnchorElement.prototype.click = function () { window.downloaded = {name: this.download, href: this.href}; }; true`)),
		chromedp.Click(chromedp.CSS(`[data-testid="png-cpu"]`)),
		void(chromedp.Poll[bool](`!!window.downloaded`, chromedp.WithPollingTimeout(10*time.Second))),
	)
	if err != nil {
		t.Fatalf("PNG download: %v", err)
	}
	png := run(t, ctx, chromedp.Evaluate[string](`fetch(window.downloaded.href).then((r) => r.blob()).then(async (b) =>
		window.downloaded.name + " " + b.type + " " + b.size + " " + new Uint8Array(await b.arrayBuffer()).slice(1, 4).join(","))`, chromedp.EvalAwaitPromise))
	// name, type, size, then "PNG" in bytes 1 to 3 of the file.
	f := strings.Fields(png)
	if len(f) != 4 || f[0] != "limitlab-"+mine+"-cpu.png" || f[1] != "image/png" || f[3] != "80,78,71" || len(f[2]) < 4 {
		t.Errorf("PNG download: %q", png)
	}
}
