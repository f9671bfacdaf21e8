package web

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/workshop"
)

// overflowJS finds what is wider than a phone's viewport: the document's
// scroll width against its client width, and the elements that reach past
// the viewport's right edge, outside a chart or a code block (which may
// scroll sideways inside themselves).
const overflowJS = `(() => {
	const w = document.documentElement.clientWidth;
	const out = [];
	for (const el of document.body.querySelectorAll('*')) {
		if (el.closest('pre, code, .chart, .uplot, canvas, .scroll')) continue;
		const r = el.getBoundingClientRect();
		const pr = el.parentElement ? el.parentElement.getBoundingClientRect() : null;
		if (r.width > 0 && r.right > w + 1 && !(pr && pr.right > w + 1)) {
			out.push(el.tagName.toLowerCase() + (el.className && typeof el.className === 'string' ? '.' + el.className.split(' ').join('.') : '') + (el.dataset.testid ? '[' + el.dataset.testid + ']' : '') + ' right ' + Math.round(r.right) + ' width ' + Math.round(r.width) + ' in ' + (el.parentElement ? el.parentElement.tagName.toLowerCase() + '.' + el.parentElement.className : ''));
		}
		if (out.length >= 12) break;
	}
	return {scroll: document.documentElement.scrollWidth, client: w, offenders: out};
})()`

type overflow struct {
	Scroll    int      `json:"scroll"`
	Client    int      `json:"client"`
	Offenders []string `json:"offenders"`
}

// TestBrowserPhoneWidth opens every page at a phone's width, 390 px: none
// scrolls sideways as a whole (a chart or a code block may, inside
// itself).
func TestBrowserPhoneWidth(t *testing.T) {
	srv, m := newServer(t)
	status, body := postJSON(t, srv.URL+"/api/runs", `{"name": "phone", "duration": "10s", "repeat": 2, "lanes": [{"name": "a", "workload": {"kind": "spin", "seconds": 0.5}, "limits": {"cpus": "0.5"}}, {"name": "b", "workload": {"kind": "spin", "seconds": 0.5}}]}`)
	if status != http.StatusCreated {
		t.Fatalf("POST: %d %s", status, body)
	}
	var created struct{ ID string }
	_ = json.Unmarshal(body, &created)
	var sv workshop.SeriesView
	enginetest.WaitFor(t, 2*time.Minute, "the series to end", func() bool {
		var ok bool
		sv, ok = m.Archive().Series(created.ID)
		return ok && sv.Done == 2
	})
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	pages := []string{"/", "/labs/noisy-neighbour-cpu", "/labs/gomaxprocs", "/runs/" + created.ID, "/series/" + created.ID, "/runs",
		"/compare?a=" + sv.Runs[0].ID + "&b=" + sv.Runs[1].ID, "/engines", "/live", "/presenter", "/find",
		"/embed/runs/" + created.ID, "/embed/labs/noisy-neighbour-cpu"}
	for _, p := range pages {
		err := chromedp.Do(ctx,
			chromedp.Navigate(srv.URL+p),
			void(chromedp.Poll[bool](`document.readyState === "complete"`)),
		)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		time.Sleep(700 * time.Millisecond) // the page's scripts draw what they draw
		o := run(t, ctx, chromedp.Evaluate[overflow](overflowJS))
		if o.Scroll > o.Client {
			t.Errorf("%s at 390 px scrolls sideways: %d px wide in %d; past the edge: %v", p, o.Scroll, o.Client, o.Offenders)
		}
	}
}
