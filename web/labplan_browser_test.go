package web

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserLabPageShowsTheRunBeforeItRuns: noisy-neighbour-cpu's page
// draws its five lanes on one time axis, in their colours, gives the
// model's expectation in each of its three phases (the victim a whole
// CPU alone, two thirds beside the burners, a whole one again beside the
// tamed neighbours) and lists its four steps with their checks, before
// anything runs.
func TestBrowserLabPageShowsTheRunBeforeItRuns(t *testing.T) {
	srv, _ := newServer(t)
	ctx := browser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/labs/noisy-neighbour-cpu"),
		void(chromedp.Poll[bool](`document.querySelector('[data-testid="timeline"] rect') !== null && document.querySelector('[data-testid="timeline"] rect').style.fill !== ""`)),
	); err != nil {
		t.Fatal(err)
	}
	type bar struct {
		Width float64 `json:"width"`
		Left  float64 `json:"left"`
		Fill  string  `json:"fill"`
	}
	bars := run(t, ctx, chromedp.Evaluate[[]bar](`[...document.querySelectorAll('[data-testid="timeline"] rect')].map(r => { const b = r.getBoundingClientRect(); return {width: b.width, left: b.left, fill: r.style.fill}; })`))
	if len(bars) != 5 {
		t.Fatalf("%d bars, want one for each of the 5 lanes", len(bars))
	}
	// The victim runs 0–30 s, the burners 10–20 s: a third of its bar each,
	// starting a third of the way along it.
	v, b := bars[0], bars[1]
	if r := b.Width / v.Width; r < 0.3 || r > 0.37 {
		t.Errorf("a burner's bar is %.2f of the victim's, want a third", r)
	}
	if r := (b.Left - v.Left) / v.Width; r < 0.3 || r > 0.37 {
		t.Errorf("a burner's bar starts %.2f along the victim's, want a third", r)
	}
	if bars[0].Fill == bars[1].Fill {
		t.Errorf("lanes 1 and 2 drawn in the same colour %q", bars[0].Fill)
	}
	phases := run(t, ctx, chromedp.Evaluate[[][]string](`[...document.querySelectorAll('[data-testid="phase"]')].map(tr => [...tr.cells].map(c => c.textContent.trim()))`))
	if len(phases) != 3 {
		t.Fatalf("phases %v, want three", phases)
	}
	for k, want := range [][]string{{"1.00", "—", "—", "—", "—"}, {"0.67", "0.67", "0.67", "—", "—"}, {"1.00", "—", "—", "0.25", "0.25"}} {
		if got := phases[k][1:]; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("phase %d: %v, want %v", k+1, got, want)
		}
	}
	steps := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="lab-step"]')].map(li => li.textContent)`))
	if len(steps) != 4 || !strings.Contains(steps[0], "Check: victim") || !strings.Contains(steps[2], "docker update --cpus 0.25 burner 1") {
		t.Errorf("steps %q, want four with their checks and the change", steps)
	}
}
