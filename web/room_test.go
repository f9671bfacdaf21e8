package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/workshop"
)

const roomSpec = `{"name": "r", "duration": "60s", "lanes": [{"workload": {"kind": "spin", "seconds": 30}, "limits": {"cpus": "0.1"}}]}`

func postWith(t testing.TB, c *http.Client, url, body string) (int, string) {
	t.Helper()
	res, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestScriptsWithoutCookiesCannotFloodTheQueue: a script that drops its
// cookie is a new participant every time, but its address is the same.
func TestScriptsWithoutCookiesCannotFloodTheQueue(t *testing.T) {
	srv, _, fake := newFakeServer(t, nil, func(o *workshop.Options) {
		o.MaxRunning, o.AddressRuns, o.Quotas = 1, 3, &workshop.Quotas{Participant: workshop.Limits{Runs: 1}}
	})
	fake.Runtime = time.Minute
	noCookies := &http.Client{Timeout: 10 * time.Second}
	var accepted, refused int
	for range 8 {
		status, body := postWith(t, noCookies, srv.URL+"/api/runs", roomSpec)
		switch {
		case status == http.StatusCreated:
			accepted++
		case status == http.StatusForbidden && strings.Contains(body, `"scope": "address"`):
			refused++
		default:
			t.Fatalf("status %d: %s", status, body)
		}
	}
	if accepted != 3 || refused != 5 {
		t.Errorf("accepted %d, refused %d by the address limit; want 3 and 5", accepted, refused)
	}
}

func TestQueueHasACap(t *testing.T) {
	srv, _, fake := newFakeServer(t, nil, func(o *workshop.Options) { o.MaxRunning, o.MaxQueue, o.AddressRuns = 1, 2, -1 })
	fake.Runtime = time.Minute
	var last string
	for i := range 4 {
		status, body := postWith(t, newJarClient(), srv.URL+"/api/runs", roomSpec)
		if i < 3 && status != http.StatusCreated {
			t.Fatalf("run %d: %d %s", i, status, body)
		}
		last = body
		if i == 3 && status != http.StatusForbidden {
			t.Fatalf("a run past a full queue: %d %s", status, body)
		}
	}
	if !strings.Contains(last, "queue is full") {
		t.Errorf("refusal %s", last)
	}
}

// TestNewParticipantsPerAddressAreLimited: past the limit, an address
// without cookies may still watch but not act.
func TestNewParticipantsPerAddressAreLimited(t *testing.T) {
	srv, _, _ := newFakeServer(t, nil)
	noCookies := &http.Client{Timeout: 10 * time.Second}
	bad := `{"lanes": []}`
	for i := range NewParticipantsBurst {
		if status, body := postWith(t, noCookies, srv.URL+"/api/runs", bad); status != http.StatusBadRequest {
			t.Fatalf("request %d: %d %s", i, status, body)
		}
	}
	status, body := postWith(t, noCookies, srv.URL+"/api/runs", bad)
	if status != http.StatusTooManyRequests || !strings.Contains(body, "keep the cookie") {
		t.Errorf("past the limit: %d %s", status, body)
	}
	if res, err := noCookies.Get(srv.URL + "/api/host"); err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("watching past the limit: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	// A browser gets its cookie with the first page it loads, and keeps
	// it: it is not held back.
	browser := newJarClient()
	if res, err := browser.Get(srv.URL + "/"); err != nil {
		t.Fatal(err)
	} else {
		res.Body.Close()
	}
	if status, body := postWith(t, browser, srv.URL+"/api/runs", bad); status != http.StatusBadRequest {
		t.Errorf("a browser with its cookie: %d %s", status, body)
	}
}

func TestJoinCodeGatesRunning(t *testing.T) {
	srv, _, fake := newFakeServer(t, func(d *Deps) { d.JoinCode = "room-42" })
	fake.Runtime = 50 * time.Millisecond
	c := newJarClient()
	if status, body := postWith(t, c, srv.URL+"/api/runs", roomSpec); status != http.StatusForbidden || !strings.Contains(body, "join code") {
		t.Fatalf("a run before joining: %d %s", status, body)
	}
	res, err := c.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(page), `data-testid="join"`) {
		t.Error("the home page offers no join form to a participant who has not joined")
	}
	if status, _ := postWith(t, c, srv.URL+"/api/join", `{"code": "room-41"}`); status != http.StatusForbidden {
		t.Errorf("a wrong code: %d", status)
	}
	if status, body := postWith(t, c, srv.URL+"/api/join", `{"code": "room-42"}`); status != http.StatusOK {
		t.Fatalf("the right code: %d %s", status, body)
	}
	status, body := postWith(t, c, srv.URL+"/api/runs", roomSpec)
	if status != http.StatusCreated {
		t.Fatalf("a run after joining: %d %s", status, body)
	}
	// The proof is the participant's own: another participant's cookie
	// jar with it copied would not match.
	var created struct{ ID string }
	_ = json.Unmarshal([]byte(body), &created)
	if status, _ := postWith(t, newJarClient(), srv.URL+"/api/runs/"+created.ID+"/stop", "{}"); status != http.StatusForbidden {
		t.Errorf("a stop from a participant who has not joined: %d", status)
	}
}

func TestImportsPerParticipantAreBounded(t *testing.T) {
	srv, _, _ := newFakeServer(t, nil)
	c := newJarClient()
	for i := range ImportsBurst {
		if status, body := postWith(t, c, srv.URL+"/api/runs/import", `{"format": "x"}`); status != http.StatusBadRequest {
			t.Fatalf("import %d: %d %s", i, status, body)
		}
	}
	if status, _ := postWith(t, c, srv.URL+"/api/runs/import", `{"format": "x"}`); status != http.StatusTooManyRequests {
		t.Errorf("an import past the bound: %d", status)
	}
}

func TestLiveViewersAreCapped(t *testing.T) {
	srv, m, fake := newFakeServer(t, func(d *Deps) { d.MaxViewersPerRun, d.MaxViewersPerAddress = 2, 3 })
	fake.Runtime = time.Minute
	status, body := postWith(t, newJarClient(), srv.URL+"/api/runs", roomSpec)
	if status != http.StatusCreated {
		t.Fatalf("%d %s", status, body)
	}
	var created struct{ ID string }
	_ = json.Unmarshal([]byte(body), &created)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dial := func(id string) (*websocket.Conn, int) {
		c, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/api/runs/"+id+"/live", nil)
		if err != nil {
			if res == nil {
				t.Fatal(err)
			}
			return nil, res.StatusCode
		}
		return c, http.StatusSwitchingProtocols
	}
	a, _ := dial(created.ID)
	b, _ := dial(created.ID)
	if _, status := dial(created.ID); status != http.StatusTooManyRequests {
		t.Errorf("a third viewer of a run capped at two: %d", status)
	}
	// A second run from the same address: the address's third stream is
	// taken, its fourth is not, whatever run it is for.
	status, body = postWith(t, newJarClient(), srv.URL+"/api/runs", roomSpec)
	if status != http.StatusCreated {
		t.Fatalf("%d %s", status, body)
	}
	var second struct{ ID string }
	_ = json.Unmarshal([]byte(body), &second)
	c, status3 := dial(second.ID)
	if status3 != http.StatusSwitchingProtocols {
		t.Fatalf("a third stream from the address, on another run: %d", status3)
	}
	if _, status := dial(second.ID); status != http.StatusTooManyRequests {
		t.Errorf("a fourth stream from an address capped at three: %d", status)
	}
	c.CloseNow()
	_ = m.Stop(second.ID)
	a.CloseNow()
	enginetest.WaitFor(t, 5*time.Second, "a place to free up", func() bool {
		c, status := dial(created.ID)
		if c != nil {
			c.CloseNow()
		}
		return status == http.StatusSwitchingProtocols
	})
	b.CloseNow()
	_ = m.Stop(created.ID)
}
