package web

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/limitlab/limitlab/internal/testbed"
	"github.com/limitlab/limitlab/internal/workshop"
)

// freePort is a loopback port nobody listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startNginx runs Debian's nginx as a TLS reverse proxy on 127.0.0.1:port
// in front of upstream until the test ends; it returns a pool that trusts
// its certificate. No nginx is a failure, never a skip.
func startNginx(t testing.TB, port int, upstream string) *x509.CertPool {
	t.Helper()
	p, err := testbed.StartNginx(t.TempDir(), port, upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	return p.Pool
}

// from is a client whose connections come from addr; with a jar it keeps
// cookies as a browser does.
func from(addr string, pool *x509.CertPool, jar bool) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(addr)}, Timeout: 10 * time.Second}
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext,
		TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if jar {
		c.Jar, _ = cookiejar.New(nil)
	}
	return c
}

// TestBehindATLSProxy: behind a real nginx with TLS on port 443, run with
// the location block docs/workshops.md gives, two clients from two
// addresses are two addresses; a forged X-Forwarded-For, through the proxy
// or straight to the server, changes nothing; cookies are Secure; the
// origin check knows the page came over https, and the browser's Origin
// (no port on 443) matches the Host the proxy passes; the live stream
// comes through the proxy's websocket.
func TestBehindATLSProxy(t *testing.T) {
	srv, m, fake := newFakeServer(t, func(d *Deps) { d.TrustedProxies, _ = ParseProxies("127.0.0.1") }, func(o *workshop.Options) {
		o.MaxRunning, o.AddressRuns, o.Quotas = 1, 1, &workshop.Quotas{}
	})
	fake.Runtime = time.Minute
	const port = 443
	pool := startNginx(t, port, strings.TrimPrefix(srv.URL, "http://"))
	base := "https://localhost"

	post := func(c *http.Client, url, body string, header ...string) (int, string, *http.Response) {
		t.Helper()
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b), res
	}
	ada, grace := from("127.0.0.2", pool, true), from("127.0.0.3", pool, true)
	status, body, res := post(ada, base+"/api/runs", roomSpec)
	if status != http.StatusCreated {
		t.Fatalf("a run through the proxy: %d %s", status, body)
	}
	var secure bool
	for _, c := range res.Cookies() {
		secure = secure || (c.Name == "__Host-"+ParticipantCookie && c.Secure && c.Path == "/" && c.Domain == "")
	}
	if !secure {
		t.Errorf("the participant cookie over https through a trusted proxy is not a Secure __Host- cookie: %v", res.Header["Set-Cookie"])
	}
	var created struct{ ID string }
	_ = json.Unmarshal([]byte(body), &created)
	// The proxy is one address; its clients are two: the second is not
	// held to the first's address cap of one run.
	if status, body, _ := post(grace, base+"/api/runs", roomSpec); status != http.StatusCreated {
		t.Fatalf("a run from a second address through the proxy: %d %s", status, body)
	}
	// A new participant from Ada's address, forging another address
	// through the proxy, is still Ada's address.
	status, body, _ = post(from("127.0.0.2", pool, false), base+"/api/runs", roomSpec, "X-Forwarded-For", "198.51.100.9")
	if status != http.StatusForbidden || !strings.Contains(body, "your address 127.0.0.2 has 1") {
		t.Errorf("a forged X-Forwarded-For through the proxy: %d %s", status, body)
	}
	// Straight to the server from an address not trusted, the forged
	// header is not read either.
	status, body, _ = post(from("127.0.0.2", nil, false), srv.URL+"/api/runs", roomSpec, "X-Forwarded-For", "198.51.100.9", "X-Forwarded-Proto", "https")
	if status != http.StatusForbidden || !strings.Contains(body, "your address 127.0.0.2 has 1") {
		t.Errorf("a forged X-Forwarded-For straight to the server: %d %s", status, body)
	}
	// The page's own origin is https through the proxy: http with the
	// same host, or another host, is another origin.
	if status, body, _ := post(ada, base+"/api/runs/"+created.ID+"/stop", "{}", "Origin", "http://localhost"); status != http.StatusForbidden || !strings.Contains(body, "cross-origin") {
		t.Errorf("a stop from the page's host over http: %d %s", status, body)
	}
	if status, body, _ := post(ada, base+"/api/runs/"+created.ID+"/stop", "{}", "Origin", "https://evil.example"); status != http.StatusForbidden {
		t.Errorf("a stop from another origin: %d %s", status, body)
	}
	// The live stream through the proxy's websocket.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "wss://localhost/api/runs/"+created.ID+"/live", &websocket.DialOptions{HTTPClient: ada})
	if err != nil {
		t.Fatalf("the live stream through the proxy: %v", err)
	}
	ws.SetReadLimit(16 << 20)
	if _, msg, err := ws.Read(ctx); err != nil || len(msg) == 0 {
		t.Errorf("nothing on the live stream through the proxy: %v", err)
	}
	ws.CloseNow()
	if status, body, _ := post(ada, base+"/api/runs/"+created.ID+"/stop", "{}", "Origin", base); status != http.StatusAccepted {
		t.Errorf("a stop from the page's own https origin: %d %s", status, body)
	}
	m.ClearQueue("", "test")
}
