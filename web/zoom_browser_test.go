package web

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/limitlab/limitlab/internal/enginetest"
)

// spread is how far one lane's values swing in a zoomed chart.
type spread struct {
	N        int
	Min, Max float64
	P10, P90 float64
}

// TestBrowserZoomShowsTheQuotaPeriod runs the quota-period lab, sampled
// every 50 ms, and zooms its throttling chart into one second of each
// quota lane: throttled 50 ms at a time, the 50 ms/100 ms lane's
// throttled time per sample swings between none and all of it; the
// 5 ms/10 ms lane's, throttled a little in every sample, stays flat. The
// run page reports how the samples kept to the 50 ms.
//
// The lanes' throttling is measured, again if the host spoiled it; what
// the zoom shows and the sampling line are checked once, on the run that
// held.
func TestBrowserZoomShowsTheQuotaPeriod(t *testing.T) {
	var z zoomed
	enginetest.Measure(t, "the quota-period lab zoomed", func(t testing.TB) { z = zoomShowsTheQuotaPeriod(t) })
	for lane, w := range z.windows {
		lo, hi, ok := strings.Cut(w, "-")
		a, _ := strconv.ParseFloat(lo, 64)
		b, _ := strconv.ParseFloat(hi, 64)
		if !ok || b-a > 1.01 {
			t.Errorf("lane %d zoomed to %q, want one second", lane+1, w)
		}
	}
	if !strings.Contains(z.sampling, "Sampled every 50 ms") || !strings.Contains(z.sampling, "99th percentile") {
		t.Errorf("sampling line %q", z.sampling)
	}
	if err := writeShot(t, "zoom.png", z.shot); err != nil {
		t.Fatal(err)
	}
}

// zoomed is what the zoomed run page showed: each zoom's window, the
// sampling line, and a screenshot.
type zoomed struct {
	windows  []string
	sampling string
	shot     []byte
}

// zoomShowsTheQuotaPeriod runs the lab, zooms into a second of each quota
// lane, and checks the throttled time the zoom holds.
func zoomShowsTheQuotaPeriod(t testing.TB) zoomed {
	var z zoomed
	srv, _ := newServer(t)
	ctx := browser(t)
	err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/labs/quota-period"),
		chromedp.Click(chromedp.CSS(`[data-testid="run-lab"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="run-page"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="results"][data-state="done"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="sampling"]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	zoomInto := func(lane int) spread {
		t.Helper()
		sel := `[data-testid="chart-throttled"]`
		run(t, ctx, chromedp.Evaluate[bool](`(() => { document.querySelector('[data-testid="zoom-`+strconv.Itoa(lane)+`"]').click(); return true; })()`))
		raw := run(t, ctx, chromedp.Evaluate[string](`document.querySelector('`+sel+`').dataset.spread || "[]"`))
		z.windows = append(z.windows, run(t, ctx, chromedp.Evaluate[string](`document.querySelector('`+sel+`').dataset.zoom`)))
		var per []spread
		if err := json.Unmarshal([]byte(raw), &per); err != nil || len(per) != 3 {
			t.Fatalf("spread %q: %v", raw, err)
		}
		return per[lane]
	}
	long, short := zoomInto(1), zoomInto(2)
	z.sampling = liveText(t, ctx, `[data-testid="sampling"]`)
	z.shot = run(t, ctx, chromedp.FullScreenshot(100))
	t.Logf("50ms/100ms: %+v; 5ms/10ms: %+v; %s", long, short, z.sampling)
	// One second at 50 ms is 20 samples; some are lost at a lane's edges.
	if long.N < 15 || short.N < 15 {
		t.Fatalf("the zoom holds %d and %d samples of the lanes, want about 20", long.N, short.N)
	}
	if long.Max-long.Min < 600 {
		t.Errorf("the 50ms/100ms lane's throttled time swings over %.0f-%.0f ms/s, want it between about none and all", long.Min, long.Max)
	}
	// Flat is judged between the 10th and 90th percentiles of the
	// samples: one sample taken late or early by the server's clock
	// (the sampling line gives how far) swings on its own.
	if short.P90-short.P10 >= long.P90-long.P10 || short.P90-short.P10 > 450 {
		t.Errorf("the 5ms/10ms lane's throttled time spans %.0f-%.0f ms/s from its 10th to its 90th percentile: not flatter than the 50ms/100ms lane's %.0f-%.0f", short.P10, short.P90, long.P10, long.P90)
	}
	return z
}
