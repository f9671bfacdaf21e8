package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/workshop"
)

// TestBrowserSeriesPlot: a series' page draws one point a run for each
// lane, in the lane's colour, with its mean between its smallest and its
// largest run.
//
// The series' figures are measured, again if the host spoiled them; the
// history and the plot are checked once, on the series that held.
func TestBrowserSeriesPlot(t *testing.T) {
	var srv *httptest.Server
	var sv workshop.SeriesView
	enginetest.Measure(t, "a series measured for its plot", func(t testing.TB) { srv, sv = seriesToPlot(t) })
	browserSeriesPlot(t, srv, sv)
}

// seriesToPlot runs a series of two lanes three times, and checks what
// it measured: every run counted (none the host's load could have
// decided), and the half-CPU lane's md5 about twice as long as the whole
// CPU's, each of its runs longer than any of the other's.
func seriesToPlot(t testing.TB) (*httptest.Server, workshop.SeriesView) {
	srv, m := newServer(t)
	status, body := postJSON(t, srv.URL+"/api/runs", `{"name": "plotted", "mode": "sequential", "duration": "20s", "repeat": 3, "lanes": [
		{"name": "half", "workload": {"kind": "md5", "mb": 64}, "limits": {"cpus": "0.5"}}, {"name": "whole", "workload": {"kind": "md5", "mb": 64}}]}`)
	if status != http.StatusCreated {
		t.Fatalf("POST: %d %s", status, body)
	}
	var created struct{ ID string }
	_ = json.Unmarshal(body, &created)
	var sv workshop.SeriesView
	enginetest.WaitFor(t, 3*time.Minute, "the series to end", func() bool {
		var ok bool
		sv, ok = m.Archive().Series(created.ID)
		return ok && sv.Done == 3
	})
	if len(sv.Lanes) != 2 || sv.Lanes[0].Stats.N != 3 || sv.Lanes[1].Stats.N != 3 {
		// A run the host's load could have decided is left out of the
		// series' figures (and so of the plot).
		t.Fatalf("lanes %+v: want each lane's three runs counted (runs left out as noisy: %d)", sv.Lanes, sv.Noisy)
	}
	if half, whole := sv.Lanes[0].Stats, sv.Lanes[1].Stats; half.Min <= whole.Max {
		t.Errorf("the half-CPU lane's runs (%.2f–%.2f s) do not all take longer than the whole CPU's (%.2f–%.2f s)", half.Min, half.Max, whole.Min, whole.Max)
	}
	return srv, sv
}

// browserSeriesPlot checks the history's rows of a series and its plot in
// Chromium.
func browserSeriesPlot(t *testing.T, srv *httptest.Server, sv workshop.SeriesView) {
	created := struct{ ID string }{sv.ID}
	// The history lists the series' runs under its first, which links to
	// the series.
	hist := getPage(t, srv.URL+"/runs")
	first := strings.Index(hist, `data-run-id="`+created.ID+`"`)
	link := strings.Index(hist, `href="/series/`+created.ID+`" data-testid="series-link">series of 3`)
	second, third := strings.Index(hist, `data-run-id="`+sv.Runs[1].ID+`" class="in-series"`), strings.Index(hist, `data-run-id="`+sv.Runs[2].ID+`" class="in-series"`)
	if first < 0 || link < first || second < link || third < second {
		t.Errorf("history: the series' first run at %d, its link at %d, its later runs at %d and %d; want them in that order", first, link, second, third)
	}
	ctx := browser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/series/"+created.ID),
		void(chromedp.Poll[bool](`(() => { const c = document.querySelector('[data-testid="series-plot"] circle'); return c !== null && c.style.fill !== ""; })()`)),
	); err != nil {
		t.Fatal(err)
	}
	type row struct {
		Points []float64 `json:"points"`
		Mean   float64   `json:"mean"`
		Fill   string    `json:"fill"`
	}
	rows := run(t, ctx, chromedp.Evaluate[[]row](`[...document.querySelectorAll('[data-testid^="series-plot-"]')].map(r => ({
		points: [...r.querySelectorAll('circle.run')].map(c => c.getBoundingClientRect().x + c.getBoundingClientRect().width / 2),
		mean: (() => { const l = r.querySelector('line.mean'); return l ? l.getBoundingClientRect().x : -1; })(),
		fill: (r.querySelector('circle.run') || {style: {}}).style.fill || "",
	}))`))
	if len(rows) != 2 {
		t.Fatalf("%d plotted lanes, want 2", len(rows))
	}
	for i, r := range rows {
		if len(r.Points) != sv.Lanes[i].Stats.N {
			t.Fatalf("lane %d: %d points, want one for each of its %d runs", i+1, len(r.Points), sv.Lanes[i].Stats.N)
		}
		lo, hi := min(r.Points[0], r.Points[1], r.Points[2]), max(r.Points[0], r.Points[1], r.Points[2])
		if r.Mean < lo-1 || r.Mean > hi+1 {
			t.Errorf("lane %d: the mean at x %.1f, outside its runs %.1f–%.1f", i+1, r.Mean, lo, hi)
		}
	}
	if rows[0].Fill == "" || rows[0].Fill == rows[1].Fill {
		t.Errorf("the lanes' points in %q and %q, want each lane's colour", rows[0].Fill, rows[1].Fill)
	}
	// The half-CPU lane's runs took longer: its points lie to the right
	// of the whole CPU's.
	if min(rows[0].Points[0], rows[0].Points[1], rows[0].Points[2]) <= max(rows[1].Points[0], rows[1].Points[1], rows[1].Points[2]) {
		t.Errorf("the half-CPU lane's runs %v do not all lie beyond the whole CPU's %v", rows[0].Points, rows[1].Points)
	}
}
