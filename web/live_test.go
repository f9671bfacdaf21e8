package web

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/limitlab/limitlab"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/hub"
	"github.com/limitlab/limitlab/internal/runner"
)

func wsURL(srv *httptest.Server, id string) string {
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/api/runs/" + id + "/live"
}

func TestLiveLateSubscriberGetsHistoryThenLive(t *testing.T) {
	srv, m := newServer(t)
	status, body := postJSON(t, srv.URL+"/api/runs", `{"name": "live", "duration": "30s",
	  "lanes": [{"workload": {"kind": "spin", "seconds": 3}}, {"workload": {"kind": "spin", "seconds": 3}, "limits": {"cpus": "0.5"}}]}`)
	if status != 201 {
		t.Fatalf("status %d: %s", status, body)
	}
	var created struct{ ID string }
	_ = json.Unmarshal(body, &created)
	feed, _ := m.Archive().Feed(created.ID)
	// Join late: once several sample batches have been published.
	enginetest.WaitFor(t, 30*time.Second, "samples in the history", func() bool { return len(feed.History()) >= 8 })
	atConnect := len(feed.History())

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, _, err := websocket.Dial(ctx, wsURL(srv, created.ID), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	var msgs []runner.Message
	var closeErr error
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			closeErr = err
			break
		}
		var msg runner.Message
		if err := json.Unmarshal(b, &msg); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, msg)
	}
	if got := websocket.CloseStatus(closeErr); got != websocket.StatusNormalClosure {
		t.Errorf("closed with %v, want a normal closure at the run's end", closeErr)
	}
	if len(msgs) <= atConnect {
		t.Fatalf("got %d messages, no more than the %d of history at connect", len(msgs), atConnect)
	}
	if first := msgs[0]; first.Type != "run" || first.Run.State != runner.StateQueued {
		t.Errorf("first message %+v, want the run as created (queued)", first)
	}
	last := msgs[len(msgs)-1]
	if last.Type != "run" || last.Run.State != runner.StateDone {
		t.Errorf("last message %+v, want the run done", last)
	}
	// Samples after the history carry later times than those in it: the
	// live part continues the history without a gap or a repeat.
	var lastT float64
	liveSamples := 0
	for i, msg := range msgs {
		for _, s := range msg.Samples {
			if s.Lane == 0 {
				if s.T <= lastT {
					t.Fatalf("message %d: sample at t=%g after t=%g", i, s.T, lastT)
				}
				lastT = s.T
				if i >= atConnect {
					liveSamples++
				}
			}
		}
	}
	if liveSamples == 0 {
		t.Error("no live samples after the history")
	}
}

// feedOnly serves one hub as every run's feed; nothing else is used.
type feedOnly struct {
	History
	h *hub.Hub
}

func (f feedOnly) Feed(string) (*hub.Hub, bool) { return f.h, true }

func TestLiveStalledViewerDoesNotDelayOthers(t *testing.T) {
	h := hub.New(4)
	srv := httptest.NewServer(NewRouter(Deps{History: feedOnly{h: h}, Static: limitlab.Static(), WriteTimeout: 2 * time.Second}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	stalled, _, err := websocket.Dial(ctx, wsURL(srv, "x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.CloseNow()
	reader, _, err := websocket.Dial(ctx, wsURL(srv, "x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.CloseNow()
	reader.SetReadLimit(1 << 20)
	enginetest.WaitFor(t, 10*time.Second, "both viewers subscribed", func() bool { return h.Subscribers() == 2 })

	// Large messages fill the stalled viewer's socket buffers, so its
	// writer blocks and its hub buffer overflows. The publisher waits only
	// for the reading viewer, message by message.
	const n = 1500
	payload := strings.Repeat("x", 32<<10)
	got := make(chan string)
	readErr := make(chan error, 1)
	go func() {
		for {
			_, b, err := reader.Read(ctx)
			if err != nil {
				readErr <- err
				return
			}
			got <- string(b[:strings.IndexByte(string(b), ' ')])
		}
	}()
	for i := range n {
		h.Publish([]byte(strconv.Itoa(i) + " " + payload))
		select {
		case s := <-got:
			if s != strconv.Itoa(i) {
				t.Fatalf("reader got message %s, want %d", s, i)
			}
		case err := <-readErr:
			t.Fatalf("reader lost at message %d: %v", i, err)
		}
	}
	if h.Subscribers() != 1 {
		t.Errorf("%d subscribers after %d messages: the stalled viewer was not dropped", h.Subscribers(), n)
	}
	h.Close()
	if err := <-readErr; websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Errorf("reader closed with %v, want normal closure", err)
	}
	// The stalled viewer, reading at last, finds the policy-violation close
	// after what was buffered.
	stalled.SetReadLimit(1 << 20)
	for {
		_, _, err := stalled.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
				t.Errorf("stalled viewer closed with %v, want policy violation", err)
			}
			break
		}
	}
}

func TestLiveUnknownRun(t *testing.T) {
	srv, _ := newServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, res, err := websocket.Dial(ctx, wsURL(srv, "nope"), nil); err == nil || res == nil || res.StatusCode != 404 {
		t.Errorf("dial of an unknown run: %v", err)
	}
}

func TestLiveRefusesOtherOrigins(t *testing.T) {
	h := hub.New(0)
	srv := httptest.NewServer(NewRouter(Deps{History: feedOnly{h: h}, Static: limitlab.Static()}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts := &websocket.DialOptions{HTTPHeader: map[string][]string{"Origin": {"http://evil.example"}}}
	if _, res, err := websocket.Dial(ctx, wsURL(srv, "x"), opts); err == nil || res == nil || res.StatusCode != 403 {
		t.Errorf("cross-origin dial: %v", err)
	}
}
