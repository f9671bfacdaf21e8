package web

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workload/wire"
)

// TestLoadTableSaysHowLatencyCounts: the load table gives p99.9 and says,
// per load lane, whether its latencies count from each request's due
// instant (an open loop, with its late requests) or from when each went (a
// closed loop, whose tail is not corrected); a record made before that
// was kept says nothing it does not know.
func TestLoadTableSaysHowLatencyCounts(t *testing.T) {
	lane := func(name string, l *wire.Latency) runner.LaneResult {
		var r runner.LaneResult
		r.Name, r.Workload, r.LatencyMs = name, specs.Workload{Kind: "load", Target: "svc"}, l
		return r
	}
	v := runner.RunView{Lanes: []runner.LaneResult{
		lane("open", &wire.Latency{P50: 1, P90: 2, P99: 40, P999: 41.5, Max: 44, Count: 800, Loop: wire.OpenLoop, Late: 3}),
		lane("closed", &wire.Latency{P50: 1, P90: 2, P99: 5, P999: 6, Max: 7, Count: 1024, Loop: wire.ClosedLoop}),
		lane("old", &wire.Latency{P50: 1, P90: 2, P99: 5, Max: 7}),
	}}
	var b bytes.Buffer
	if err := loadTable(v).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{"<th>p99.9 ms</th>", "<td>41.5</td>", "open loop, corrected for coordinated omission); 3 of 800 sent over 1 ms late",
		"closed loop: a client waits for its answer, so the tail is not corrected"} {
		if !strings.Contains(html, want) {
			t.Errorf("the load table lacks %q:\n%s", want, html)
		}
	}
	if n := strings.Count(html, "—</td>"); n != 2 {
		t.Errorf("%d dashes, want the old record's p99.9 and loop", n)
	}
}
