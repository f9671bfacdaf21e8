package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/limitlab/limitlab/internal/workshop"
)

// joinAs joins the room with the code as a new browser, under name.
func joinAs(t testing.TB, base, code, name string) *http.Client {
	t.Helper()
	c := newJarClient()
	body, _ := json.Marshal(map[string]string{"code": code, "name": name})
	if status, b := postWith(t, c, base+"/api/join", string(body)); status != http.StatusOK {
		t.Fatalf("%s joins: %d %s", name, status, b)
	}
	return c
}

// TestARoomBehindOneAddress: a room behind one NAT is one address. Each
// participant who proved the join code is held to its own quota, not its
// address's; a client without the code is still capped by address.
func TestARoomBehindOneAddress(t *testing.T) {
	srv, m, fake := newFakeServer(t, func(d *Deps) { d.JoinCode = "room-42" }, func(o *workshop.Options) {
		o.MaxRunning, o.AddressRuns, o.Quotas = 1, 6, &workshop.Quotas{Participant: workshop.Limits{Runs: 1}}
	})
	fake.Runtime = time.Minute
	var clients []*http.Client
	for i := range 50 {
		c := joinAs(t, srv.URL, "room-42", fmt.Sprintf("attendee %d", i))
		clients = append(clients, c)
		if status, body := postWith(t, c, srv.URL+"/api/runs", roomSpec); status != http.StatusCreated {
			t.Fatalf("attendee %d of 50 from one address queues a run: %d %s", i, status, body)
		}
	}
	// Each is still held to its own quota: one run at a time.
	if status, body := postWith(t, clients[7], srv.URL+"/api/runs", roomSpec); status != http.StatusForbidden || !strings.Contains(body, `"scope": "participant"`) {
		t.Errorf("a second run of one attendee: %d %s", status, body)
	}
	// A script from the same address without the code cannot run at all,
	// and one on a server without a code is held to the address's cap.
	if status, body := postWith(t, &http.Client{Timeout: 10 * time.Second}, srv.URL+"/api/runs", roomSpec); status != http.StatusForbidden || !strings.Contains(body, "join code") {
		t.Errorf("a cookieless script beside the room: %d %s", status, body)
	}
	m.ClearQueue("", "test")

	open, _, fake2 := newFakeServer(t, nil, func(o *workshop.Options) {
		o.MaxRunning, o.AddressRuns, o.Quotas = 1, 6, &workshop.Quotas{Participant: workshop.Limits{Runs: 1}}
	})
	fake2.Runtime = time.Minute
	accepted := 0
	for range 8 {
		status, body := postWith(t, &http.Client{Timeout: 10 * time.Second}, open.URL+"/api/runs", roomSpec)
		switch {
		case status == http.StatusCreated:
			accepted++
		case status != http.StatusForbidden || !strings.Contains(body, `"scope": "address"`):
			t.Fatalf("a cookieless script on a server without a code: %d %s", status, body)
		}
	}
	if accepted != 6 {
		t.Errorf("a cookieless script got %d runs from one address, want the address's 6", accepted)
	}
}

// TestJoinsPerAddressAreBounded: someone holding the code cannot make
// themselves a crowd faster than JoinBurst at once; joining again is
// free.
func TestJoinsPerAddressAreBounded(t *testing.T) {
	srv, _, _ := newFakeServer(t, func(d *Deps) { d.JoinCode = "room-42" })
	clients := make([]*http.Client, JoinBurst)
	var wg sync.WaitGroup
	for i := range JoinBurst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clients[i] = joinAs(t, srv.URL, "room-42", "")
		}()
	}
	wg.Wait()
	status, body := postWith(t, newJarClient(), srv.URL+"/api/join", `{"code": "room-42"}`)
	if status != http.StatusTooManyRequests || !strings.Contains(body, `"field": "participant"`) {
		t.Errorf("join %d from one address at once: %d %s", JoinBurst+1, status, body)
	}
	if status, body := postWith(t, clients[0], srv.URL+"/api/join", `{"code": "room-42", "name": "Ada"}`); status != http.StatusOK {
		t.Errorf("a participant who joined already, joining again with a name: %d %s", status, body)
	}
}

// TestARoomWithTyposJoinsWithinAMinute: fifty people behind one address
// join at once, five of whom mistype the code first; every one is in
// within a minute, none refused.
func TestARoomWithTyposJoinsWithinAMinute(t *testing.T) {
	srv, _, _ := newFakeServer(t, func(d *Deps) { d.JoinCode = strongCode })
	start := time.Now()
	var wg sync.WaitGroup
	var refused atomic.Int64
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newJarClient()
			if i%10 == 0 {
				if status, body := postWith(t, c, srv.URL+"/api/join", `{"code": "limitlab-4243"}`); status != http.StatusForbidden {
					t.Errorf("participant %d's typo: %d %s, want 403", i, status, body)
				}
			}
			if status, body := postWith(t, c, srv.URL+"/api/join", `{"code": "`+strongCode+`"}`); status != http.StatusOK {
				refused.Add(1)
				t.Errorf("participant %d: %d %s", i, status, body)
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	t.Logf("50 joins behind one address, 5 typos among them: all in after %s", took.Round(time.Millisecond))
	if took > time.Minute || refused.Load() > 0 {
		t.Errorf("%d refused, %s: want all in within a minute", refused.Load(), took)
	}
}

func TestDisplayNames(t *testing.T) {
	srv, _, _ := newFakeServer(t, func(d *Deps) { d.JoinCode = "room-42" })
	joinAs(t, srv.URL, "room-42", "Grace  Hopper")
	for _, tc := range []struct{ name, status, want string }{
		{"grace hopper", "409", "taken"},
		{"GRACEHOPPER", "409", "taken"},
		{strings.Repeat("x", 41), "400", "at most 40"},
		{"tab\there", "400", ""}, // folded to a space: fine
		{"bell\a", "400", "printable"},
	} {
		body, _ := json.Marshal(map[string]string{"code": "room-42", "name": tc.name})
		status, b := postWith(t, newJarClient(), srv.URL+"/api/join", string(body))
		if tc.name == "tab\there" {
			if status != http.StatusOK || !strings.Contains(b, `"name": "tab here"`) {
				t.Errorf("name %q: %d %s", tc.name, status, b)
			}
			continue
		}
		if fmt.Sprint(status) != tc.status || !strings.Contains(b, tc.want) || !strings.Contains(b, `"field": "name"`) {
			t.Errorf("name %q: %d %s; want %s naming the field and %q", tc.name, status, b, tc.status, tc.want)
		}
	}
}

// TestAKeynoteFromOneAddress: a keynote's audience behind one NAT watches
// the featured run when the caps allow it; one past the run's cap is
// refused.
func TestAKeynoteFromOneAddress(t *testing.T) {
	const audience = 300
	m, fake := newFakeManager(t)
	// The listener, as -max-conns and -max-conns-per-address set it for a
	// keynote behind one NAT.
	srv := serveConns(t, m, func(d *Deps) {
		withPresenter(d)
		d.MaxViewersPerRun, d.MaxViewersPerAddress = audience, 2*audience
	}, 4*audience)
	fake.Runtime = time.Minute
	status, body := postWith(t, newJarClient(), srv.URL+"/api/runs", roomSpec)
	if status != http.StatusCreated {
		t.Fatalf("%d %s", status, body)
	}
	var created struct{ ID string }
	_ = json.Unmarshal([]byte(body), &created)
	defer func() { _ = m.Stop(created.ID) }()
	if status, body := call(t, newJarClient(), "POST", srv.URL+"/api/runs/"+created.ID+"/feature", presenterToken); status != http.StatusOK {
		t.Fatalf("featuring the run: %d %s", status, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The projector's page follows the featured stream to the run's own.
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/api/runs/" + created.ID + "/live"
	var conns []*websocket.Conn
	defer func() {
		for _, c := range conns {
			c.CloseNow()
		}
	}()
	for i := range audience {
		c, res, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			t.Fatalf("viewer %d of %d from one address: %v (%v)", i+1, audience, err, res)
		}
		c.SetReadLimit(16 << 20)
		conns = append(conns, c)
	}
	// Every viewer gets the run's history.
	for i, c := range conns {
		if _, _, err := c.Read(ctx); err != nil {
			t.Fatalf("viewer %d reads nothing: %v", i+1, err)
		}
	}
	_, res, err := websocket.Dial(ctx, url, nil)
	if err == nil || res == nil || res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("viewer %d of a run capped at %d: %v %v", audience+1, audience, err, res)
	}
	// The featured stream's viewers are held to the same caps.
	featured := "ws" + strings.TrimPrefix(srv.URL, "http") + "/api/featured/live"
	for i := range audience {
		c, _, err := websocket.Dial(ctx, featured, nil)
		if err != nil {
			t.Fatalf("projector %d of %d: %v", i+1, audience, err)
		}
		conns = append(conns, c)
	}
	if _, res, err := websocket.Dial(ctx, featured, nil); err == nil || res == nil || res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("projector %d of a stream capped at %d: %v %v", audience+1, audience, err, res)
	}
}

// TestJoinedViewersAreNotCountedByAddress: behind one NAT, participants
// who entered the join code each watch, past the per-address viewer cap;
// a viewer without the code is held to it.
func TestJoinedViewersAreNotCountedByAddress(t *testing.T) {
	srv, m, fake := newFakeServer(t, func(d *Deps) { d.JoinCode = "room-42"; d.MaxViewersPerAddress = 1 })
	fake.Runtime = time.Minute
	ada := joinAs(t, srv.URL, "room-42", "Ada")
	status, body := postWith(t, ada, srv.URL+"/api/runs", roomSpec)
	if status != http.StatusCreated {
		t.Fatalf("%d %s", status, body)
	}
	var created struct{ ID string }
	_ = json.Unmarshal([]byte(body), &created)
	defer func() { _ = m.Stop(created.ID) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/api/runs/" + created.ID + "/live"
	dial := func(c *http.Client) int {
		conn, res, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: c})
		if err != nil {
			if res == nil {
				t.Fatal(err)
			}
			return res.StatusCode
		}
		t.Cleanup(func() { conn.CloseNow() })
		return http.StatusSwitchingProtocols
	}
	for i, c := range []*http.Client{ada, joinAs(t, srv.URL, "room-42", "Grace"), joinAs(t, srv.URL, "room-42", "Linus")} {
		if s := dial(c); s != http.StatusSwitchingProtocols {
			t.Errorf("joined viewer %d from an address capped at one stream: %d", i+1, s)
		}
	}
	anon := &http.Client{Timeout: 10 * time.Second}
	if s := dial(anon); s != http.StatusSwitchingProtocols {
		t.Fatalf("the address's one uncounted-by-code viewer: %d", s)
	}
	if s := dial(anon); s != http.StatusTooManyRequests {
		t.Errorf("a second viewer without the code from the same address: %d, want 429", s)
	}
}
