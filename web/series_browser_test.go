package web

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workshop"
)

// TestBrowserRepeatsAndCompares runs a spec three times as a series on
// the real engine: the runs' pages link to the series, whose page shows
// each lane's mean and spread and finds half a CPU slower than one beyond
// the noise; the lanes took turns at going first.
//
// The series' comparison is measured, again if the host spoiled it; the
// series' shape and its page are checked once, on the series that held.
func TestBrowserRepeatsAndCompares(t *testing.T) {
	var srv *httptest.Server
	var ctx context.Context
	var s workshop.SeriesView
	var id string
	enginetest.Measure(t, "a series compared in Chromium", func(t testing.TB) {
		srv, ctx, s, id = browserRepeatsAndCompares(t)
	})
	if s.Done != 3 || s.Unit != "s" || len(s.Comparisons) != 1 {
		t.Fatalf("series %+v", s)
	}
	if o := s.Runs[1].Order; o[0] != "half" {
		t.Errorf("run 2 ran %v: the lanes did not take turns", o)
	}
	err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/runs/"+s.Runs[2].ID),
		chromedp.Click(chromedp.CSS(`[data-testid="series-link"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="series-page"]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	link := run(t, ctx, chromedp.Location())
	rows := run(t, ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('[data-testid="series-lanes"] tbody tr')).map((r) => r.textContent)`))
	differ := run(t, ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="comparisons"] li').dataset.differ`))
	if !strings.HasSuffix(link, "/series/"+id) || len(rows) != 2 || !strings.HasPrefix(rows[0], "one3") || differ != "yes" {
		t.Errorf("series page at %s: rows %q, differ %q", link, rows, differ)
	}
}

// browserRepeatsAndCompares starts the series in Chromium and checks its
// measured comparison: half a CPU against one.
func browserRepeatsAndCompares(t testing.TB) (*httptest.Server, context.Context, workshop.SeriesView, string) {
	srv, _ := newServer(t)
	ctx := browser(t)
	id := browserStart(t, ctx, srv.URL, `{"name": "repeat", "mode": "sequential", "duration": "60s", "repeat": 3,
	  "lanes": [{"name": "one", "workload": {"kind": "md5", "mb": 400}, "limits": {"cpus": "1"}},
	            {"name": "half", "workload": {"kind": "md5", "mb": 400}, "limits": {"cpus": "0.5"}}]}`)
	var s workshop.SeriesView
	enginetest.WaitFor(t, 2*time.Minute, "the series to end", func() bool {
		getJSON(t, srv.URL+"/api/series/"+id, &s)
		ended := 0
		for _, r := range s.Runs {
			if r.State != runner.StateQueued && r.State != runner.StateRunning {
				ended++
			}
		}
		return len(s.Runs) == 3 && ended == 3
	})
	if len(s.Comparisons) != 1 {
		t.Fatalf("series %+v", s)
	}
	c := s.Comparisons[0]
	t.Logf("%s", c.Text)
	enginetest.Figure(t, "repeat: half a CPU against one, wall time over 3 runs", "×%.3f, p = %.2g", c.Ratio, c.P)
	if !c.Computed || !c.Differ || c.Ratio < 1.7 || c.Ratio > 2.3 {
		t.Errorf("half against one: %+v", c)
	}
	// Judged over all three runs: none the host's load could have decided.
	if s.Verdict == nil || !s.Verdict.Judged || !strings.Contains(s.Verdict.Explanation, "Over 3 runs") {
		t.Errorf("verdict over the repeats %+v", s.Verdict)
	}
	return srv, ctx, s, id
}
