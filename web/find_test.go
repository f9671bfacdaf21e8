package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/limitlab/limitlab/internal/engine/enginefake"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/workshop"
)

const findSpec = `{"name": "right-size", "service": {"kind": "http", "work_us": 4000, "gomaxprocs": "1"}, "load": {"rate": 150, "seconds": 8},
  "target": {"p99_ms": 50}, "search": {"limit": "cpus", "min": "0.2", "max": "1.8", "resolution": "0.1", "repeats": 2}}`

// searchToItsEnd starts a search as c and follows it over the API to its
// end.
func searchToItsEnd(t testing.TB, c *http.Client, base, spec string) workshop.SearchView {
	t.Helper()
	status, body := postWith(t, c, base+"/api/find", spec)
	if status != http.StatusCreated {
		t.Fatalf("%d %s", status, body)
	}
	var created struct{ ID string }
	_ = json.Unmarshal([]byte(body), &created)
	var v workshop.SearchView
	enginetest.WaitFor(t, time.Minute, "the search to end", func() bool {
		getJSON(t, base+"/api/find/"+created.ID, &v)
		return v.State != workshop.SearchRunning
	})
	return v
}

// TestFindOverTheAPI: a bad search is refused at once naming its field and
// starts nothing; a participant without the join code cannot start one; a
// search runs to its answer, each probe a run; stopping it once it ended
// is accepted and changes nothing. (Another participant may not stop a
// running one: TestASecondSearchIsRefused.)
func TestFindOverTheAPI(t *testing.T) {
	srv, _, fake := newFakeServer(t, func(d *Deps) { d.JoinCode = "room-42" })
	fake.Runtime = 20 * time.Millisecond
	fake.Summarize = enginefake.ServiceNeeding(0.6)
	ada := joinAs(t, srv.URL, "room-42", "Ada")
	for _, c := range []struct{ body, field string }{
		{strings.Replace(findSpec, `"p99_ms": 50`, `"p99_ms": -3`, 1), "target.p99_ms"},
		{strings.Replace(findSpec, `"max": "1.8"`, `"max": "nine"`, 1), "search.max"},
		{strings.Replace(findSpec, `"kind": "http"`, `"kind": "http", "image": "evil"`, 1), `"field": "service.image"`},
		{strings.Replace(findSpec, `"max": "1.8"`, `"max": "9"`, 1), "cpus"},
	} {
		status, body := postWith(t, ada, srv.URL+"/api/find", c.body)
		if status != http.StatusBadRequest || !strings.Contains(body, c.field) {
			t.Errorf("%s: %d %s, want 400 naming %s", c.body, status, body, c.field)
		}
	}
	if n := fake.Counts().Creates; n != 0 {
		t.Errorf("%d containers created for refused searches", n)
	}
	if status, body := postWith(t, newJarClient(), srv.URL+"/api/find", findSpec); status != http.StatusForbidden || !strings.Contains(body, "join code") {
		t.Errorf("a search without the join code: %d %s", status, body)
	}
	v := searchToItsEnd(t, ada, srv.URL, findSpec)
	created := struct{ ID string }{v.ID}
	if v.State != workshop.SearchDone || v.Answer == nil || !v.Answer.Found || v.Answer.Limit != 0.7 || len(v.Probes) == 0 {
		t.Fatalf("search %s (%s), answer %+v", v.State, v.Error, v.Answer)
	}
	page := getPage(t, srv.URL+"/find/"+created.ID)
	for _, want := range []string{`data-testid="find-chart"`, "The answer: --cpus 0.7", `data-testid="find-recommendation"`, "/runs/" + v.Probes[0].Run} {
		if !strings.Contains(page, want) {
			t.Errorf("the search's page lacks %q", want)
		}
	}
	if status, _ := postWith(t, joinAs(t, srv.URL, "room-42", "Eve"), srv.URL+"/api/find/"+created.ID+"/stop", "{}"); status != http.StatusAccepted {
		t.Errorf("stopping an ended search: %d", status)
	}
	if status, _ := postWith(t, ada, srv.URL+"/api/find/nope/stop", "{}"); status != http.StatusNotFound {
		t.Errorf("a search that does not exist: %d", status)
	}
}

// TestBrowserFindChartFills: in Chromium, a search started from the form
// draws its chart point by point as its probes end, then its answer.
func TestBrowserFindChartFills(t *testing.T) {
	srv, _, fake := newFakeServer(t, nil)
	fake.Runtime = 700 * time.Millisecond
	fake.Summarize = enginefake.ServiceNeeding(0.6)
	ctx := browser(t)
	points := `Number((document.querySelector('[data-testid="find-chart"]') || {dataset: {points: "0"}}).dataset.points)`
	var seen []int
	err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/find"),
		chromedp.SetValue(chromedp.CSS(`input[name="min"]`), "0.2"),
		chromedp.SetValue(chromedp.CSS(`input[name="max"]`), "1.8"),
		chromedp.SetValue(chromedp.CSS(`input[name="resolution"]`), "0.1"),
		chromedp.SetValue(chromedp.CSS(`input[name="repeats"]`), "2"),
		chromedp.Click(chromedp.CSS(`[data-testid="find-start"]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	// The form's script goes to the search's page once the server took
	// it: a look while the page changes may fail, and is tried again.
	enginetest.WaitFor(t, 30*time.Second, "the search's page", func() bool {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`location.pathname.startsWith("/find/") && !!document.querySelector('[data-testid="find-chart"]')`))
		return err == nil && ok
	})
	enginetest.WaitFor(t, 2*time.Minute, "the search's answer on its page", func() bool {
		n := run(t, ctx, chromedp.Evaluate[int](points))
		if len(seen) == 0 || seen[len(seen)-1] != n {
			seen = append(seen, n)
		}
		return run(t, ctx, chromedp.Evaluate[bool](`!!document.querySelector('[data-testid="find-answer"]')`))
	})
	t.Logf("points drawn as the page saw them: %v", seen)
	if len(seen) < 3 || seen[len(seen)-1] < 3 {
		t.Errorf("the chart drew %v points as the search went, want it to fill one probe at a time", seen)
	}
	settled(t, ctx)
	if err := writeShot(t, "find.png", run(t, ctx, chromedp.FullScreenshot(100))); err != nil {
		t.Error(err)
	}
	answer := liveText(t, ctx, `[data-testid="find-answer"]`)
	if !strings.Contains(answer, "The answer: --cpus 0.7") || !strings.Contains(answer, "0.6 cores") {
		t.Errorf("answer %q", answer)
	}
}

// TestFindLab: the right-size lab's page offers its search, which runs to
// an answer judged against the model's floor.
func TestFindLab(t *testing.T) {
	srv, _, fake := newFakeServer(t, nil)
	fake.Runtime = 20 * time.Millisecond
	fake.Summarize = enginefake.ServiceNeeding(0.6)
	page := getPage(t, srv.URL+"/labs/right-size-go")
	for _, want := range []string{`data-testid="find-lab"`, `data-testid="run-search"`, "from 0.4 to 1.6 at a resolution of 0.1"} {
		if !strings.Contains(page, want) {
			t.Errorf("the lab's page lacks %q", want)
		}
	}
	v := searchToItsEnd(t, newJarClient(), srv.URL, `{"lab": "right-size-go"}`)
	created := struct{ ID string }{v.ID}
	if v.Answer == nil || v.Answer.Limit != 0.7 || v.Verdict == nil || !v.Verdict.Pass || v.Spec.Lab != "right-size-go" {
		t.Fatalf("the lab's search: %s %s, answer %+v, verdict %+v", v.State, v.Error, v.Answer, v.Verdict)
	}
	if page := getPage(t, srv.URL+"/find/"+created.ID); !strings.Contains(page, "As predicted: the model puts the floor at 0.6 cores") {
		t.Error("the search's page does not give its verdict")
	}
}

// TestBrowserSearchesBothInTurn: in Chromium, a search started from the
// form with a second turn finds --cpus, then links the search of
// --memory, which runs with that --cpus fixed and says so.
func TestBrowserSearchesBothInTurn(t *testing.T) {
	srv, _, fake := newFakeServer(t, nil)
	fake.Runtime = 20 * time.Millisecond
	fake.Summarize = enginefake.ServiceNeeding(0.6)
	ctx := browser(t)
	err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/find"),
		chromedp.SetValue(chromedp.CSS(`input[name="min"]`), "0.2"),
		chromedp.SetValue(chromedp.CSS(`input[name="max"]`), "1.8"),
		chromedp.SetValue(chromedp.CSS(`input[name="resolution"]`), "0.1"),
		chromedp.SetValue(chromedp.CSS(`select[name="then_limit"]`), "memory"),
		chromedp.SetValue(chromedp.CSS(`input[name="then_min"]`), "16m"),
		chromedp.SetValue(chromedp.CSS(`input[name="then_max"]`), "64m"),
		chromedp.SetValue(chromedp.CSS(`input[name="then_resolution"]`), "16m"),
		chromedp.Click(chromedp.CSS(`[data-testid="find-start"]`)),
		waitPath("/find/"),
	)
	if err != nil {
		t.Fatal(err)
	}
	enginetest.WaitFor(t, time.Minute, "the first turn's link to the second", func() bool {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!document.querySelector('[data-testid="find-then"] a')`))
		return err == nil && ok
	})
	then := liveText(t, ctx, `[data-testid="find-then"]`)
	// The answer, 0.7, and the limit it recommends, 25% above: 0.9.
	if !strings.Contains(then, "--memory") || !strings.Contains(then, "--cpus 0.9, the limit recommended above, fixed") {
		t.Errorf("the first turn's link: %q", then)
	}
	first := run(t, ctx, chromedp.Evaluate[string](`location.pathname`))
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="find-then"] a`))); err != nil {
		t.Fatal(err)
	}
	enginetest.WaitFor(t, 30*time.Second, "the second turn's page", func() bool {
		p, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname`))
		return err == nil && p != first && strings.HasPrefix(p, "/find/")
	})
	enginetest.WaitFor(t, time.Minute, "the second turn's answer", func() bool {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!document.querySelector('[data-testid="find-answer"]')`))
		return err == nil && ok
	})
	fixed := liveText(t, ctx, `[data-testid="find-fixed"]`)
	if !strings.Contains(fixed, "--cpus 0.9") || !strings.Contains(fixed, "the search before") {
		t.Errorf("the second turn's page: %q", fixed)
	}
	if answer := liveText(t, ctx, `[data-testid="find-answer"]`); !strings.Contains(answer, "--memory") {
		t.Errorf("the second turn's answer: %q", answer)
	}
	settled(t, ctx)
	if err := writeShot(t, "find-in-turn.png", run(t, ctx, chromedp.FullScreenshot(100))); err != nil {
		t.Error(err)
	}
}

// settled waits until a search's page has stopped fetching its live part
// (the search is over) and the document has its width, before a
// screenshot of the whole page: CI once caught the page with none ("Cannot
// take screenshot with 0 width") right after the answer came.
func settled(t *testing.T, ctx context.Context) {
	t.Helper()
	enginetest.WaitFor(t, 30*time.Second, "the search's page to settle", func() bool {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("find-live")?.dataset.state !== "running" && document.documentElement.getBoundingClientRect().width > 0 && document.readyState === "complete"`))
		return err == nil && ok
	})
}

// TestASecondSearchIsRefused: a participant runs one search at a time; a
// second is refused at once, naming the limit, and starts nothing; another
// participant's is taken, and that participant may not stop the first's
// running search (403), which its own participant may.
func TestASecondSearchIsRefused(t *testing.T) {
	srv, _, fake := newFakeServer(t, func(d *Deps) { d.JoinCode = strongCode })
	fake.Runtime = time.Minute
	fake.Summarize = enginefake.ServiceNeeding(0.6)
	ada := joinAs(t, srv.URL, strongCode, "Ada")
	status, body := postWith(t, ada, srv.URL+"/api/find", findSpec)
	if status != http.StatusCreated {
		t.Fatalf("Ada's first search: %d %s", status, body)
	}
	var first struct{ ID string }
	_ = json.Unmarshal([]byte(body), &first)
	defer postWith(t, ada, srv.URL+"/api/find/"+first.ID+"/stop", "{}")
	enginetest.WaitFor(t, 10*time.Second, "the first probe to start", func() bool { return fake.Counts().Creates > 0 })
	creates := fake.Counts().Creates
	for range 4 {
		status, body := postWith(t, ada, srv.URL+"/api/find", findSpec)
		if status != http.StatusForbidden || !strings.Contains(body, `"limit": "searches"`) || !strings.Contains(body, first.ID) {
			t.Errorf("Ada's second search: %d %s, want 403 naming the searches limit and her running search", status, body)
		}
	}
	grace := joinAs(t, srv.URL, strongCode, "Grace")
	status, body = postWith(t, grace, srv.URL+"/api/find", findSpec)
	if status != http.StatusCreated {
		t.Errorf("Grace's search beside Ada's: %d %s", status, body)
	}
	var second struct{ ID string }
	_ = json.Unmarshal([]byte(body), &second)
	defer postWith(t, grace, srv.URL+"/api/find/"+second.ID+"/stop", "{}")
	// Grace's first probe waits its turn behind Ada's: refused searches
	// and a queued probe create nothing.
	if n := fake.Counts().Creates; n != creates {
		t.Errorf("%d containers created by refused searches", n-creates)
	}
	if status, body := postWith(t, grace, srv.URL+"/api/find/"+first.ID+"/stop", "{}"); status != http.StatusForbidden || !strings.Contains(body, `"field": "find"`) {
		t.Errorf("Grace stopping Ada's running search: %d %s, want 403", status, body)
	}
	if v, _ := workshopSearch(t, srv.URL, first.ID); v.State != workshop.SearchRunning {
		t.Errorf("Ada's search after Grace's try: %s", v.State)
	}
	if status, body := postWith(t, ada, srv.URL+"/api/find/"+first.ID+"/stop", "{}"); status != http.StatusAccepted {
		t.Errorf("Ada stopping her own search: %d %s", status, body)
	}
}

// workshopSearch is a search as GET /api/find/{id} gives it.
func workshopSearch(t *testing.T, base, id string) (workshop.SearchView, int) {
	t.Helper()
	var v workshop.SearchView
	return v, getJSON(t, base+"/api/find/"+id, &v)
}

// TestFindPagesAnswerPages: a search's page and its fragment that name no
// search answer as a page does, not with the API's JSON.
func TestFindPagesAnswerPages(t *testing.T) {
	srv, _, _ := newFakeServer(t, nil)
	for _, p := range []string{"/find/0000000000000000", "/find/0000000000000000/live"} {
		res, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") || strings.Contains(string(b), `"errors"`) {
			t.Errorf("GET %s: %d %s %q, want a page's 404", p, res.StatusCode, res.Header.Get("Content-Type"), b)
		}
	}
}
