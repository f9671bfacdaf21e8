package web

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/enginetest"

	"github.com/chromedp/chromedp"
)

// TestBrowserWalksAGuidedLab runs noisy-neighbour-cpu from its lab page
// and walks its steps in Chromium: each is ticked as its check holds, and
// the third asks for a live change, made with its button.
//
// Each step's check is a measured figure, walked again if the host spoiled
// one; the change's row and the ticks are checked once, on the walk that
// held.
func TestBrowserWalksAGuidedLab(t *testing.T) {
	var ctx context.Context
	enginetest.Measure(t, "a guided lab walked in Chromium", func(t testing.TB) { ctx = browserWalksAGuidedLab(t) })
	change := liveText(t, ctx, `[data-testid="change-row"]`)
	ticks := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('#steps li.step.done').length`))
	shot := run(t, ctx, chromedp.FullScreenshot(100))
	if !strings.Contains(change, "burner 1") || !strings.Contains(change, "docker update --cpus 0.25") {
		t.Errorf("change row %q", change)
	}
	if ticks != 4 {
		t.Errorf("%d steps ticked, want 4", ticks)
	}
	if err := writeShot(t, "guided.png", shot); err != nil {
		t.Fatal(err)
	}
}

// browserWalksAGuidedLab runs the lab from its page and waits for each
// step's check to hold, making the third step's change with its button.
func browserWalksAGuidedLab(t testing.TB) context.Context {
	srv, _ := newServer(t)
	ctx := browser(t)
	step := func(i string) string { return `[data-testid="step-` + i + `"]` }
	done := func(i string) chromedp.Action[chromedp.Void] {
		return void(chromedp.Poll[bool](`document.querySelector('`+step(i)+`').dataset.state === "done"`,
			chromedp.WithPollingTimeout(time.Minute)))
	}
	err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/labs/noisy-neighbour-cpu"),
		chromedp.Click(chromedp.CSS(`[data-testid="run-lab"]`)),
		// The lab's page lists its steps too: wait for the run's.
		waitPath("/runs/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="steps"]`)),
		done("0"),
		done("1"),
		// The change's button is enabled once its step is the active one.
		void(chromedp.Poll[bool](`!document.querySelector('[data-testid="make-change-2"]').disabled`,
			chromedp.WithPollingTimeout(time.Minute))),
		chromedp.Click(chromedp.CSS(`[data-testid="make-change-2"]`)),
		done("2"),
		done("3"),
	)
	// The steps with their checks' values, logged either way: a check's
	// margin on this machine is worth seeing when it passes too.
	states := run(t, ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('[data-testid^="step-"]')).map((s) => s.dataset.state + ": " + s.textContent)`))
	if err != nil {
		t.Fatalf("%v\nsteps: %q", err, states)
	}
	t.Logf("steps: %q", states)
	return ctx
}

// writeShot saves a screenshot where screenshotPath says.
func writeShot(t testing.TB, name string, png []byte) error {
	path := screenshotPath(t, name)
	t.Logf("screenshot: %s", path)
	return os.WriteFile(path, png, 0o644)
}
