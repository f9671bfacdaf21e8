package web

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/workshop"
	"golang.org/x/sys/unix"
)

// bigRun imports a run whose export is several megabytes: a fake run's
// own export with host samples enough added to its stream.
func bigRun(t *testing.T, base string, c *http.Client) (string, int) {
	t.Helper()
	id := startRun(t, base, `{"name": "small", "duration": "10m", "interval": "50ms", "lanes": [{"workload": {"kind": "spin", "seconds": 1}}]}`)
	waitEnded(t, base, id)
	res, err := c.Get(base + "/api/runs/" + id + "/export")
	if err != nil {
		t.Fatal(err)
	}
	var e workshop.Export
	err = json.NewDecoder(res.Body).Decode(&e)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	// As many ticks as ten minutes at 50 ms make, each with a host
	// sample and a lane's.
	for i := range 12_000 {
		t := float64(i) * 0.05
		e.Stream = append(e.Stream,
			json.RawMessage(fmt.Sprintf(`{"type": "host", "host": {"t": %g, "dt": 0.05, "foreign_cores": 0.01, "steal_cores": 0}}`, t)),
			json.RawMessage(fmt.Sprintf(`{"type": "samples", "samples": [{"lane": 0, "t": %g, "dt": 0.05, "cpu": 0.25, "mem_mib": 3.5, "mem_limit_mib": 512}]}`, t)))
	}
	b, _ := json.Marshal(e)
	status, body := postWith(t, c, base+"/api/runs/import", string(b))
	if status != http.StatusCreated {
		t.Fatalf("import: %d %s", status, body)
	}
	var created struct{ ID string }
	_ = json.Unmarshal([]byte(body), &created)
	res, err = c.Get(base + "/api/runs/" + created.ID + "/export")
	if err != nil {
		t.Fatal(err)
	}
	whole, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return created.ID, len(whole)
}

// TestASlowReaderIsCutOff: a client that asks for a run's export of
// megabytes and reads nothing holds its connection only until one write's
// deadline passes. The server holds one connection here, so the next
// client is served only once the slow reader's is given up; what the slow
// reader then reads is less than the export.
func TestASlowReaderIsCutOff(t *testing.T) {
	m, _ := newFakeManager(t)
	srv := serveConns(t, m, func(d *Deps) { d.WriteTimeout = 500 * time.Millisecond }, 1)
	c := newJarClient()
	id, whole := bigRun(t, srv.URL, c)
	if whole < 2<<20 {
		t.Fatalf("the export has %d bytes: too few to fill the sockets' buffers", whole)
	}
	c.CloseIdleConnections()
	// A reader with a small receive window, which reads nothing.
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /api/runs/%s/export HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", id)
	next := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	enginetest.WaitFor(t, 30*time.Second, "the server to give up the slow reader's connection and serve the next client", func() bool {
		res, err := next.Get(srv.URL + "/api/host")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(conn)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the connection was still open: %v", err)
	}
	if len(got) >= whole {
		t.Errorf("the slow reader got %d bytes of a %d-byte export: it was not cut off", len(got), whole)
	}
	t.Logf("the slow reader got %d of %d bytes before the server gave up", len(got), whole)
	// A reader that reads gets the whole export.
	res, err := next.Get(srv.URL + "/api/runs/" + id + "/export")
	if err != nil {
		t.Fatal(err)
	}
	var e workshop.Export
	err = json.NewDecoder(res.Body).Decode(&e)
	res.Body.Close()
	if err != nil || len(e.Stream) < 24_000 {
		t.Errorf("a reader that reads got an export of %d stream messages (%v), want the whole of it", len(e.Stream), err)
	}
}

// TestConnectionsPerAddress: past its cap, an address's next connection is
// closed as soon as it is accepted; another address, and a trusted proxy,
// are served.
func TestConnectionsPerAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxies, _ := ParseProxies("127.0.0.3")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go srv.Serve(Listener(ln, ListenOptions{MaxConns: 100, PerAddress: 2, TrustedProxies: proxies}))
	defer srv.Close()
	dial := func(from string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	get := func(c net.Conn) (string, error) {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprint(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		b, err := io.ReadAll(c)
		return string(b), err
	}
	held := []net.Conn{dial("127.0.0.1"), dial("127.0.0.1")}
	if b, err := get(dial("127.0.0.1")); strings.Contains(b, "ok") {
		t.Errorf("a third connection from one address was served past a cap of two: %q %v", b, err)
	}
	if b, err := get(dial("127.0.0.2")); !strings.Contains(b, "ok") {
		t.Errorf("another address: %q %v", b, err)
	}
	var proxied []net.Conn
	for range 4 {
		proxied = append(proxied, dial("127.0.0.3"))
	}
	for i, c := range proxied {
		if b, err := get(c); !strings.Contains(b, "ok") {
			t.Errorf("the trusted proxy's connection %d: %q %v", i+1, b, err)
		}
	}
	held[0].Close()
	enginetest.WaitFor(t, 10*time.Second, "a place for the address once one of its connections closed", func() bool {
		b, _ := get(dial("127.0.0.1"))
		return strings.Contains(b, "ok")
	})
}
