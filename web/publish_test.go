package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workshop"
	"golang.org/x/net/html"
)

// syntheticExport is a run of lanes lanes over ticks ticks of 100 ms, each
// lane at 0.5 cores with 10 periods a tick, 4 of them throttled.
func syntheticExport(lanes, ticks int) workshop.Export {
	v := runner.RunView{ID: "abcdef123456", Name: "synthetic", State: runner.StateDone, Ended: true, IntervalMs: 100,
		Elapsed: float64(ticks) / 10, CreatedAt: time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)}
	for i := range lanes {
		v.Lanes = append(v.Lanes, runner.LaneResult{Index: i, Name: fmt.Sprintf("lane %d", i), StartedAt: 0, EndedAt: v.Elapsed})
	}
	run, _ := json.Marshal(runner.Message{Type: runner.KindRun, Run: &v})
	e := workshop.Export{Run: v, Stream: []json.RawMessage{run}}
	for k := 1; k <= ticks; k++ {
		var b strings.Builder
		b.WriteString(`{"type":"samples","sent_us":123,"samples":[`)
		for i := range lanes {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"lane":%d,"t":%.3f,"dt":0.1,"cpu":%.9f,"periods":10,"throttled_periods":4,"throttled_pct":40,"latency_ms":{"p99":%d}}`,
				i, float64(k)/10, 0.4+0.2*float64(k%2), k%7)
		}
		b.WriteString(`]}`)
		e.Stream = append(e.Stream, json.RawMessage(b.String()))
	}
	return e
}

func TestReplayStreamKeepsASmallRunWhole(t *testing.T) {
	e := syntheticExport(4, 240)
	out, note, err := replayStream(e.Run, e.Stream)
	if err != nil || note != "" || len(out) != len(e.Stream) {
		t.Fatalf("a 4-lane run of 240 ticks: %d messages of %d, note %q, %v", len(out), len(e.Stream), note, err)
	}
	if bytes.Contains(out[1], []byte("0.400000000")) || bytes.Contains(out[1], []byte("sent_us")) {
		t.Errorf("a tick's figures are not rounded: %s", out[1])
	}
}

func TestReplayStreamMergesTicksOutsideTheZoom(t *testing.T) {
	e := syntheticExport(12, 600) // 7,200 lane-samples: three ticks in one
	out, note, err := replayStream(e.Run, e.Stream)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(note, "every 3 ticks") {
		t.Errorf("note %q", note)
	}
	var samples, zoomed, merged int
	for _, raw := range out[1:] {
		var msg struct {
			Samples []map[string]any `json:"samples"`
		}
		_ = json.Unmarshal(raw, &msg)
		samples += len(msg.Samples)
		s := msg.Samples[0]
		t0 := s["t"].(float64)
		// The zoom window of every lane: the second from 29.5 s, and half
		// a second either side.
		if t0 >= 29 && t0 <= 31 {
			zoomed++
		}
		n := math.Round(s["dt"].(float64) / 0.1)
		if s["periods"].(float64) != 10*n || s["throttled_periods"].(float64) != 4*n || s["throttled_pct"].(float64) != 40 {
			t.Fatalf("a tick of %v at %.1f s: %v", n, t0, s)
		}
		if n == 3 {
			merged++
			if cpu := s["cpu"].(float64); cpu < 0.45 || cpu > 0.55 {
				t.Fatalf("a merged tick's cpu is %v, want the mean of 0.4 and 0.6 over its ticks", cpu)
			}
			if p99 := s["latency_ms"].(map[string]any)["p99"].(float64); p99 < 2 {
				t.Fatalf("a merged tick's p99 is %v, want the worst of its ticks", p99)
			}
		}
	}
	if zoomed < 20 || merged < (600-20)/3-2 {
		t.Errorf("%d ticks kept whole in the lanes' zoom window, %d merged", zoomed, merged)
	}
	if samples > MaxReplaySamples+12*20 {
		t.Errorf("%d lane-samples kept, over %d and the zoom windows'", samples, MaxReplaySamples)
	}
}

// A published page loads nothing: every script and style is inline, each
// allowed by its hash in the page's own policy, and no element names an
// address to fetch.
func TestPublishedPageNeedsNothingElse(t *testing.T) {
	page, err := NewPublisher(limitlab.Static()).Page(syntheticExport(4, 240), false)
	if err != nil {
		t.Fatal(err)
	}
	var csp string
	var inline []string
	z := html.NewTokenizer(bytes.NewReader(page))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		tok := z.Token()
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		attrs := map[string]string{}
		for _, a := range tok.Attr {
			attrs[a.Key] = a.Val
		}
		if src, ok := attrs["src"]; ok {
			t.Errorf("<%s src=%q>: a published page fetches nothing", tok.Data, src)
		}
		if href, ok := attrs["href"]; ok && tok.Data == "link" && href != "data:," {
			t.Errorf("<link href=%q>", href)
		}
		if tok.Data == "meta" && attrs["http-equiv"] == "Content-Security-Policy" {
			csp = attrs["content"]
		}
		if (tok.Data == "script" && attrs["type"] == "") || tok.Data == "style" {
			z.Next()
			inline = append(inline, string(z.Text()))
		}
	}
	if !strings.HasPrefix(csp, "default-src 'none'") {
		t.Fatalf("the page's policy is %q", csp)
	}
	if len(inline) != 3 {
		t.Fatalf("%d inline scripts and styles, want uPlot, the replay and the styles", len(inline))
	}
	for _, s := range inline {
		sum := sha256.Sum256([]byte(s))
		if h := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, h) {
			t.Errorf("an inline script or style of %d bytes is not allowed by its hash %s", len(s), h)
		}
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("the policy allows unsafe sources: %q", csp)
	}
}

// BenchmarkPublishPage renders a 12-lane run of 600 ticks (60 s at 100 ms)
// as a page: what an export or an uncached embed costs the server.
func BenchmarkPublishPage(b *testing.B) {
	p := NewPublisher(limitlab.Static())
	e := syntheticExport(12, 600)
	if _, err := p.Page(e, false); err != nil { // the bundle, once
		b.Fatal(err)
	}
	b.ReportAllocs()
	var size int
	for b.Loop() {
		page, err := p.Page(e, false)
		if err != nil {
			b.Fatal(err)
		}
		size = len(page)
	}
	b.ReportMetric(float64(size), "bytes/page")
}

// Published pages are kept: an ended run's among the last few, a running
// run's for a moment only.
func TestPublishedPagesAreKeptAWhile(t *testing.T) {
	var c pageCache
	now := time.Now()
	c.put("running", keptPage{page: []byte("r")}, now)
	c.put("ended", keptPage{page: []byte("e"), ended: true}, now)
	if _, _, ok := c.get("running", now.Add(runningKept/2)); !ok {
		t.Error("a running run's page is not kept for a moment")
	}
	if _, _, ok := c.get("running", now.Add(2*runningKept)); ok {
		t.Error("a running run's page is kept past its moment")
	}
	if _, _, ok := c.get("ended", now.Add(time.Hour)); !ok {
		t.Error("an ended run's page is not kept")
	}
	for i := range publishedKept {
		c.put(fmt.Sprint(i), keptPage{ended: true}, now)
	}
	if _, _, ok := c.get("ended", now); ok || len(c.pages) != publishedKept {
		t.Errorf("%d pages kept, the oldest still there: want the last %d", len(c.pages), publishedKept)
	}
}
