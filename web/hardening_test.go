package web

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine/enginefake"
	"github.com/limitlab/limitlab/internal/store"
	"github.com/limitlab/limitlab/internal/workshop"
)

// newFakeServer serves the real router over a manager on the fake engine:
// for the checks of requests, which need no containers.
func newFakeServer(t testing.TB, deps func(*Deps), options ...func(*workshop.Options)) (*httptest.Server, *workshop.Manager, *enginefake.Engine) {
	t.Helper()
	m, fake := newFakeManager(t, options...)
	return serve(t, m, deps), m, fake
}

// newFakeManager is a manager on the fake engine, with a store.
func newFakeManager(t testing.TB, options ...func(*workshop.Options)) (*workshop.Manager, *enginefake.Engine) {
	t.Helper()
	fake := enginefake.New()
	fake.Runtime = 50 * time.Millisecond
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	opts := workshop.Options{Host: enginefake.HostOf(fake), Store: st, Quotas: &workshop.Quotas{}}
	for _, o := range options {
		o(&opts)
	}
	m := workshop.NewManager(fake, opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = m.Shutdown(ctx)
	})
	return m, fake
}

func newJarClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 30 * time.Second}
}

func TestPagesRefuseFramingAndSniffing(t *testing.T) {
	srv, _, _ := newFakeServer(t, nil)
	for _, path := range []string{"/", "/api/host", "/static/app.css"} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		h := res.Header
		if h.Get("X-Frame-Options") != "SAMEORIGIN" || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'self'") ||
			h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: headers %v", path, h)
		}
		for _, want := range []string{"script-src 'self';", "object-src 'none'", "base-uri 'none'"} {
			if !strings.Contains(h.Get("Content-Security-Policy"), want) {
				t.Errorf("%s: CSP %q lacks %q", path, h.Get("Content-Security-Policy"), want)
			}
		}
	}
}

// TestAnOpaqueOriginIsNobodys: an -allow-origin of * admits another
// site's page, but never Origin: null (a sandboxed frame, a file).
func TestAnOpaqueOriginIsNobodys(t *testing.T) {
	srv, _, _ := newFakeServer(t, func(d *Deps) { d.AllowedOrigins = []string{"*"} })
	for origin, want := range map[string]int{"null": http.StatusForbidden, "http://other.example": http.StatusBadRequest, "file://": http.StatusForbidden} {
		req, _ := http.NewRequest("POST", srv.URL+"/api/runs", strings.NewReader(`{"lanes": []}`))
		req.Header.Set("Content-Type", "text/plain")
		req.Header.Set("Origin", origin)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("Origin %q under -allow-origin '*': %d, want %d", origin, res.StatusCode, want)
		}
	}
}

// TestTheJoinFormPosts: the home page's join form posts its code in the
// body, so that Enter before its script loads puts no code in a URL, and
// the server takes the form as it takes JSON.
func TestTheJoinFormPosts(t *testing.T) {
	srv, _, _ := newFakeServer(t, func(d *Deps) { d.JoinCode = "limitlab-4242" })
	_, body := get(t, srv.URL+"/")
	if !strings.Contains(body, `method="post" action="/api/join"`) {
		t.Errorf("the join form does not post to /api/join")
	}
	c := newJarClient()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	req, _ := http.NewRequest("POST", srv.URL+"/api/join", strings.NewReader("code=limitlab-4242&name=Ada"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", srv.URL)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	joined := false
	for _, ck := range res.Cookies() {
		joined = joined || ck.Name == JoinCookie
	}
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" || !joined {
		t.Errorf("the form's post: %d to %q, join cookie %v; want 303 to / with the cookie", res.StatusCode, res.Header.Get("Location"), joined)
	}
}

func TestStateChangesNeedProofOfOrigin(t *testing.T) {
	srv, _, _ := newFakeServer(t, nil)
	post := func(contentType string, header map[string]string) int {
		req, _ := http.NewRequest("POST", srv.URL+"/api/runs", strings.NewReader(`{"lanes": []}`))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	tests := []struct {
		name        string
		contentType string
		header      map[string]string
		want        int
	}{
		{"a form's text/plain without Origin", "text/plain", nil, http.StatusForbidden},
		{"a form's urlencoded without Origin", "application/x-www-form-urlencoded", nil, http.StatusForbidden},
		{"no content type, no Origin", "", nil, http.StatusForbidden},
		{"JSON without Origin (a script)", "application/json; charset=utf-8", nil, http.StatusBadRequest},
		{"the browser's own same-origin mark", "text/plain", map[string]string{"Sec-Fetch-Site": "same-origin"}, http.StatusBadRequest},
		{"same host, other scheme", "application/json", map[string]string{"Origin": strings.Replace(srv.URL, "http:", "https:", 1)}, http.StatusForbidden},
		{"same origin", "application/json", map[string]string{"Origin": srv.URL}, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := post(tt.contentType, tt.header); got != tt.want {
				t.Errorf("status %d, want %d", got, tt.want)
			}
		})
	}
}

// TestSlowBodyIsCutOff: a client that announces a megabyte and sends ten
// bytes is disconnected once the body deadline passes.
func TestSlowBodyIsCutOff(t *testing.T) {
	srv, _, _ := newFakeServer(t, func(d *Deps) { d.BodyTimeout = 300 * time.Millisecond })
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{\"lanes\":")
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	start := time.Now()
	_, err = io.ReadAll(bufio.NewReader(c)) // the server answers and closes, or just closes
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the connection was still open after %s", time.Since(start))
	}
}

// TestConnectionCap: past the cap, a client waits until a connection closes.
func TestConnectionCap(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go srv.Serve(Listener(ln, ListenOptions{MaxConns: 2}))
	defer srv.Close()
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	// The two idle connections hold both places; a third request waits.
	third := &http.Client{Timeout: 500 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
	if res, err := third.Get("http://" + ln.Addr().String()); err == nil {
		res.Body.Close()
		t.Fatal("a third connection was served past a cap of two")
	}
	held[0].Close()
	third.Timeout = 10 * time.Second
	res, err := third.Get("http://" + ln.Addr().String())
	if err != nil {
		t.Fatalf("after a connection closed: %v", err)
	}
	res.Body.Close()
	held[1].Close()
}

// TestWrongPresenterTokensAreSlowedNotTheToken: wrong tokens sent
// together from one address are all counted; past the address's bucket
// they are answered 429 with Retry-After, unjudged. The right token from
// that address answers 200 all the same, after 100 wrong ones, and so
// does another address.
func TestWrongPresenterTokensAreSlowedNotTheToken(t *testing.T) {
	srv, _, _ := newFakeServer(t, func(d *Deps) { d.PresenterToken = "0123456789abcdef-token" })
	check := func(c *http.Client, token string) *http.Response {
		req, _ := http.NewRequest("GET", srv.URL+"/api/presenter/check", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	retryAfter := true
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := check(http.DefaultClient, fmt.Sprintf("guess-%d", i))
			mu.Lock()
			statuses[res.StatusCode]++
			if res.StatusCode == http.StatusTooManyRequests && res.Header.Get("Retry-After") == "" {
				retryAfter = false
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if statuses[http.StatusUnauthorized] > PresenterWrongBurst+1 || statuses[http.StatusUnauthorized]+statuses[http.StatusTooManyRequests] != 100 || !retryAfter {
		t.Errorf("100 wrong tokens at once from one address: %v; want at most %d answered 401, the rest 429 with Retry-After", statuses, PresenterWrongBurst+1)
	}
	if res := check(http.DefaultClient, "0123456789abcdef-token"); res.StatusCode != http.StatusOK {
		t.Errorf("the right token after 100 wrong ones from its address: %d, want 200", res.StatusCode)
	}
	if res := check(from("127.0.0.2", nil, false), "0123456789abcdef-token"); res.StatusCode != http.StatusOK {
		t.Errorf("the right token from another address: %d, want 200", res.StatusCode)
	}
}
