package web

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/labfiles"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workshop"
)

const facilitatorLab = `{
  "id": "half-a-cpu",
  "title": "Half a CPU",
  "topic": "cpu",
  "question": "Does --cpus 0.5 hold a spinning thread to half a CPU?",
  "steps": [
    {"prompt": "Watch the spinner's cores.", "check": {"lane": "spinner", "metric": "cores", "op": "within", "value": 0.5, "tolerance": 0.2, "seconds": 1}}
  ],
  "spec": {"name": "half a CPU", "lanes": [{"name": "spinner", "workload": {"kind": "spin", "seconds": 3}, "limits": {"cpus": "0.5"}}]}
}`

// TestFacilitatorLabs loads a directory of lab files as -labs does: the
// good one is listed and runs with its steps, the broken one is listed
// with its file, field and line; a run's spec exports as a lab file that
// loads again.
func TestFacilitatorLabs(t *testing.T) {
	facilitatorDir(t)
	srv, m := newServer(t)
	var list struct {
		Labs   []experiments.Lab
		Broken []experiments.BrokenLab
	}
	getJSON(t, srv.URL+"/api/labs", &list)
	if len(list.Broken) != 1 || list.Broken[0].File != "broken.json" || list.Broken[0].Field != "spec.lanes[0].cpus" || list.Broken[0].Line != 9 {
		t.Errorf("broken labs %+v", list.Broken)
	}
	found := false
	for _, l := range list.Labs {
		found = found || (l.ID == "half-a-cpu" && l.File == "half.json" && len(l.Steps) == 1)
	}
	if !found {
		t.Errorf("the facilitator's lab is not listed")
	}
	home := getPage(t, srv.URL+"/")
	for _, want := range []string{`data-testid="topic-cpu"`, `data-testid="topic-block-io"`, `data-testid="lab-half-a-cpu"`, `broken.json:9: spec.lanes[0].cpus: `,
		`data-testid="topic-jvm"`, `data-testid="lab-jvm-heap"`} {
		if !strings.Contains(home, want) {
			t.Errorf("the home page lacks %s", want)
		}
	}
	// The host banner says each reason once.
	said := map[string]int{}
	for _, m := range regexp.MustCompile(`data-testid="unsupported-limit">([^<]*)<`).FindAllStringSubmatch(home, -1) {
		_, reason, _ := strings.Cut(m[1], ": ")
		said[reason]++
	}
	for reason, n := range said {
		if n > 1 {
			t.Errorf("the host banner says %q %d times", reason, n)
		}
	}
	if c := m.Pool().Host().Caps; !c.BlkioWeight.Supported && c.BlkioWeight == c.BlkioWeightDevice && !strings.Contains(home, "blkio-weight, blkio-weight-device: ") {
		t.Errorf("both weights are discarded for one reason, %q, yet the banner does not name them together", c.BlkioWeight.Reason)
	}
	// The facilitator's topic comes after the built-in ones, its lab under it.
	if k, j, lab := strings.Index(home, `data-testid="topic-kubernetes"`), strings.Index(home, `data-testid="topic-jvm"`), strings.Index(home, `data-testid="lab-jvm-heap"`); k < 0 || j < k || lab < j {
		t.Errorf("topic jvm at %d, kubernetes at %d, the jvm lab at %d: want the built-in topics first, the lab under its own", j, k, lab)
	}

	status, body := postJSON(t, srv.URL+"/api/runs", `{"lab": "half-a-cpu"}`)
	if status != http.StatusCreated {
		t.Fatalf("POST the facilitator's lab: %d %s", status, body)
	}
	var created struct{ ID string }
	_ = json.Unmarshal(body, &created)
	var v runner.RunView
	enginetest.WaitFor(t, time.Minute, "the lab run to end", func() bool {
		getJSON(t, srv.URL+"/api/runs/"+created.ID, &v)
		return v.Ended
	})
	if v.State != runner.StateDone || len(v.Steps) != 1 || v.Steps[0].State != runner.StepDone {
		t.Errorf("state %s, steps %+v", v.State, v.Steps)
	}

	res, err := testClient.Get(srv.URL + "/api/runs/" + created.ID + "/export?format=lab")
	if err != nil {
		t.Fatal(err)
	}
	file, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if cd := res.Header.Get("Content-Disposition"); res.StatusCode != http.StatusOK || !strings.Contains(cd, "half-a-cpu-") {
		t.Fatalf("export as lab: %d %q", res.StatusCode, cd)
	}
	back, bad := experiments.ParseLabFile("exported.json", file)
	if bad != nil {
		t.Fatalf("the exported lab file does not load: %v\n%s", bad, file)
	}
	if back.Title != "Half a CPU" || len(back.Steps) != 1 || back.ID == "half-a-cpu" {
		t.Errorf("exported lab %+v", back)
	}
}

func getPage(t testing.TB, url string) string {
	t.Helper()
	res, err := testClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// facilitatorDir loads a directory of a good and a broken lab file as -labs
// does, until the test ends.
func facilitatorDir(t testing.TB) {
	t.Helper()
	prev := experiments.Current()
	t.Cleanup(func() { experiments.Install(prev) })
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "half.json"), []byte(facilitatorLab), 0o644); err != nil {
		t.Fatal(err)
	}
	// A lab of a topic of the facilitator's own.
	jvm := strings.Replace(strings.Replace(strings.Replace(facilitatorLab, `"half-a-cpu"`, `"jvm-heap"`, 1), `"topic": "cpu"`, `"topic": "jvm"`, 1), `"Half a CPU"`, `"A JVM's heap"`, 1)
	if err := os.WriteFile(filepath.Join(dir, "jvm.json"), []byte(jvm), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(strings.Replace(facilitatorLab, `"half-a-cpu"`, `"broken-one"`, 1), `"cpus": "0.5"`, `"cpus": "half"`, 1)
	if err := os.WriteFile(filepath.Join(dir, "broken.json"), []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done, err := labfiles.Watch(ctx, dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-done })
}

// TestBrowserFacilitatorLab: in Chromium, a facilitator's lab is listed
// under its topic beside the broken file's error, runs with
// its step ticked, and its run's page offers the run as a lab file.
func TestBrowserFacilitatorLab(t *testing.T) {
	facilitatorDir(t)
	srv, _ := newServer(t)
	ctx := browser(t)
	// Each page is waited for by polling it: a node chromedp holds may go
	// as the builder rewrites its form or a click moves to another page.
	err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/"),
		void(chromedp.Poll[bool](`document.querySelector('[data-testid="labs"]') !== null && document.querySelector('fieldset.lane') !== null`)),
	)
	if err != nil {
		t.Fatalf("the home page: %v", err)
	}
	topicOf := func(id string) string {
		return run(t, ctx, chromedp.Evaluate[string](`(() => { const a = document.querySelector('[data-testid="lab-`+id+`"]'); return a ? a.closest('ul').previousElementSibling.dataset.testid : "not listed"; })()`))
	}
	topic, jvm := topicOf("half-a-cpu"), topicOf("jvm-heap")
	broken := run(t, ctx, chromedp.Evaluate[string](`(() => { const li = document.querySelector('[data-testid="broken-broken.json"]'); return li ? li.textContent : "not listed: " + document.body.innerText.slice(0, 2000); })()`))
	id := browserStart(t, ctx, srv.URL, `{"lab": "half-a-cpu"}`)
	err = chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/runs/"+id),
		void(chromedp.Poll[bool](`(document.querySelector('[data-testid="step-0"]') || {dataset: {}}).dataset.state === "done"`, chromedp.WithPollingTimeout(time.Minute))),
	)
	if err != nil {
		t.Fatal(err)
	}
	href := run(t, ctx, chromedp.AttributeValue(chromedp.CSS(`[data-testid="export-lab"]`), "href"))
	if topic != "topic-cpu" || jvm != "topic-jvm" {
		t.Errorf("the labs are listed under %q and %q, want topic-cpu and topic-jvm", topic, jvm)
	}
	if !strings.Contains(broken, "broken.json:9: spec.lanes[0].cpus: invalid argument") {
		t.Errorf("broken file listed as %q", broken)
	}
	if !strings.HasSuffix(href.Value, "/export?format=lab") {
		t.Errorf("export link %q", href.Value)
	}
}

// TestLabRepeatedIsJudgedOverItsRuns: a lab asked for twice runs as a
// series whose verdict is the lab's, judged on the two runs' mean ratios.
// The verdict is measured, again if the host spoiled it; the series'
// shape is checked once.
func TestLabRepeatedIsJudgedOverItsRuns(t *testing.T) {
	var s workshop.SeriesView
	enginetest.Measure(t, "a lab repeated and judged", func(t testing.TB) {
		srv, _ := newServer(t)
		status, body := postJSON(t, srv.URL+"/api/runs", `{"lab": "cpus-ladder", "repeat": 2}`)
		if status != http.StatusCreated {
			t.Fatalf("POST: %d %s", status, body)
		}
		var created struct{ ID string }
		_ = json.Unmarshal(body, &created)
		enginetest.WaitFor(t, 3*time.Minute, "the series to end", func() bool {
			getJSON(t, srv.URL+"/api/series/"+created.ID, &s)
			return s.Done == 2
		})
		v := s.Verdict
		if v == nil || !v.Judged || v.Metric != specs.MetricWallTime || !strings.Contains(v.Explanation, "Over 2 runs") {
			t.Fatalf("verdict over the repeats %+v", v)
		}
		t.Logf("%s", v.Explanation)
		enginetest.CheckVerdict(t, v)
	})
	if s.Lab != "cpus-ladder" || len(s.Lanes) != 4 || s.Lanes[3].Stats.N != 2 {
		t.Errorf("series %+v", s)
	}
}
