package web

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/labfiles"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workshop"
)

// roomLab is a guided lab of three short steps, the second a change the
// participant makes.
const roomLab = `{
  "id": "room-steps",
  "title": "Three steps",
  "topic": "cpu",
  "question": "Does a live --cpus change hold a spinner?",
  "steps": [
    {"prompt": "Watch the spinner run.", "check": {"lane": "spinner", "metric": "cores", "op": ">", "value": 0.1, "seconds": 1}},
    {"prompt": "Hold it to a fifth of a CPU.", "change": {"lane": "spinner", "limits": {"cpus": "0.2"}}, "check": {"lane": "spinner", "metric": "cores", "op": "<", "value": 0.35, "seconds": 1}},
    {"prompt": "See it stay there.", "check": {"lane": "spinner", "metric": "cores", "op": "<", "value": 0.35, "seconds": 1}}
  ],
  "spec": {"name": "three steps", "lanes": [{"name": "spinner", "workload": {"kind": "spin", "seconds": 60}, "limits": {"cpus": "0.5"}}]}
}`

// TestBrowserRoomView: the presenter opens the room before anybody joins
// and follows three participants live: Ada waiting at the step that asks
// for her change, Grace through all three steps, Linus with no run. The
// room downloads as CSV.
func TestBrowserRoomView(t *testing.T) {
	prev := experiments.Current()
	t.Cleanup(func() { experiments.Install(prev) })
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "room.json"), []byte(roomLab), 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err := labfiles.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	experiments.Install(cat)
	srv, m := newServerWith(t, func(d *Deps) { withPresenter(d); d.JoinCode = "room-42" }, func(o *workshop.Options) {
		o.MaxRunning, o.AddressRuns = 2, -1
	})
	ctx := browser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/presenter"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="token"]`), presenterToken),
		chromedp.Click(chromedp.CSS(`#token-form button[type="submit"]`)),
		void(chromedp.Poll[bool](`document.querySelector('[data-testid="room-status"]').textContent.startsWith("0 in the room")`,
			chromedp.WithPollingTimeout(30*time.Second))),
	); err != nil {
		t.Fatal(err)
	}

	ada, grace := joinAs(t, srv.URL, "room-42", "Ada"), joinAs(t, srv.URL, "room-42", "Grace")
	joinAs(t, srv.URL, "room-42", "Linus")
	start := func(c *http.Client) string {
		status, body := postWith(t, c, srv.URL+"/api/runs", `{"lab": "room-steps"}`)
		if status != http.StatusCreated {
			t.Fatalf("%d %s", status, body)
		}
		var created struct{ ID string }
		_ = json.Unmarshal([]byte(body), &created)
		t.Cleanup(func() { _ = m.Stop(created.ID) })
		return created.ID
	}
	adaRun, graceRun := start(ada), start(grace)
	// Grace makes her change once its step is the active one.
	enginetest.WaitFor(t, 2*time.Minute, "Grace's second step to be active", func() bool {
		v, _ := m.Archive().View(graceRun)
		return len(v.Steps) == 3 && v.Steps[1].State == runner.StepActive
	})
	if status, body := postWith(t, grace, srv.URL+"/api/runs/"+graceRun+"/lanes/0/limits", `{"cpus": "0.2"}`); status != http.StatusOK {
		t.Fatalf("Grace's change: %d %s", status, body)
	}

	rowText := func(name string) string {
		return `(document.querySelector('tr[data-testid="room-row"][data-participant="` + name + `"]') || {textContent: ""}).textContent`
	}
	err = chromedp.Do(ctx,
		void(chromedp.Poll[bool](rowText("Grace")+`.includes("3 of 3 (all done)")`, chromedp.WithPollingTimeout(2*time.Minute))),
		void(chromedp.Poll[bool](rowText("Ada")+`.includes("2 of 3")`, chromedp.WithPollingTimeout(time.Minute))),
		void(chromedp.Poll[bool](rowText("Linus")+`.includes("no run yet")`, chromedp.WithPollingTimeout(time.Minute))),
	)
	rows := run(t, ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('tr[data-testid="room-row"]')).map((r) => r.textContent)`))
	t.Logf("the room: %q", rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Errorf("%d rows, want Ada, Grace and Linus", len(rows))
	}
	if err := writeShot(t, "room.png", run(t, ctx, chromedp.FullScreenshot(100))); err != nil {
		t.Error(err)
	}
	adaRow := run(t, ctx, chromedp.Evaluate[string](rowText("Ada")))
	if !strings.Contains(adaRow, "Hold it to a fifth of a CPU.") || !strings.Contains(adaRow, "not yet") || !strings.Contains(adaRow, "running") {
		t.Errorf("Ada's row %q: want her run running at the step that waits for her change, its check not holding", adaRow)
	}

	status, csvText := call(t, &http.Client{Timeout: 10 * time.Second}, "GET", srv.URL+"/api/presenter/room.csv", presenterToken)
	if status != http.StatusOK {
		t.Fatalf("the room's CSV: %d %s", status, csvText)
	}
	for _, want := range []string{"participant,joined,run", "Ada,", "," + adaRun + ",three steps,room-steps,running,,2,3,1,false", "Grace,", "," + graceRun + ",", ",3,3,3,", "Linus,"} {
		if !strings.Contains(csvText, want) {
			t.Errorf("the room's CSV lacks %q:\n%s", want, csvText)
		}
	}
	if status, _ := call(t, &http.Client{Timeout: 10 * time.Second}, "GET", srv.URL+"/api/presenter/room.csv", ""); status != http.StatusUnauthorized {
		t.Errorf("the room's CSV without the token: %d", status)
	}

	// The presenter removes Linus: a first click asks, a second removes.
	linus := `document.querySelector('tr[data-testid="room-row"][data-participant="Linus"] [data-testid="room-remove"]')`
	err = chromedp.Do(ctx,
		void(chromedp.Evaluate[bool](`(() => { `+linus+`.click(); return true; })()`)),
		void(chromedp.Poll[bool](linus+`.textContent.includes("for good")`, chromedp.WithPollingTimeout(10*time.Second))),
		void(chromedp.Evaluate[bool](`(() => { `+linus+`.click(); return true; })()`)),
		void(chromedp.Poll[bool](`document.querySelectorAll('tr[data-testid="room-row"]').length === 2 && !document.querySelector('tr[data-participant="Linus"]')`,
			chromedp.WithPollingTimeout(30*time.Second))),
	)
	if err != nil {
		rows := run(t, ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('tr[data-testid="room-row"]')).map((r) => r.textContent)`))
		t.Fatalf("removing Linus from the room view: %v; rows %q", err, rows)
	}
}
