package sampler_test

import (
	"context"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/sampler"
)

const token = "0123456789abcdef0123"

func serve(t *testing.T) *httptest.Server {
	t.Helper()
	s := &sampler.Server{Token: token, Root: "/sys/fs/cgroup", Log: slog.Default()}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv
}

// TestSamplerRefusesBadRequests: no token, a wrong one, an id or pid that
// is not one, whatever its size, and a container that is not there are
// each refused before any stream opens, with the field named.
func TestSamplerRefusesBadRequests(t *testing.T) {
	srv := serve(t)
	id := strings.Repeat("ab", 32)
	uid := "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"
	for _, tt := range []struct {
		name, query, token string
		status             int
		says               string
	}{
		{"no token", "id=" + id + "&pid=1", "", http.StatusUnauthorized, "token"},
		{"wrong token", "id=" + id + "&pid=1", token + "x", http.StatusUnauthorized, "token"},
		{"short id", "id=abc&pid=1", token, http.StatusBadRequest, "id:"},
		{"huge id", "id=" + strings.Repeat("a", 1<<20) + "&pid=1", token, http.StatusBadRequest, "id:"},
		{"no pid", "id=" + id, token, http.StatusBadRequest, "pid:"},
		{"pid past pid_max", "id=" + id + "&pid=99999999", token, http.StatusBadRequest, "pid:"},
		{"no such container", "id=" + id + "&pid=1", token, http.StatusNotFound, "no "},
		{"pod and pid", "id=" + id + "&pid=1&pod=" + uid, token, http.StatusBadRequest, "pod:"},
		{"not a pod uid", "id=" + id + "&pod=../../etc", token, http.StatusBadRequest, "pod:"},
		{"no such pod", "id=" + id + "&pod=" + uid, token, http.StatusNotFound, "no "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/cgroup?"+tt.query, nil)
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			began := time.Now()
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			body := string(b)
			if res.StatusCode != tt.status || !strings.Contains(body, tt.says) {
				t.Errorf("%d %q, want %d saying %q", res.StatusCode, body, tt.status, tt.says)
			}
			if len(body) > 300 {
				t.Errorf("the refusal is %d bytes: it echoes the request", len(body))
			}
			t.Logf("refused in %v", time.Since(began))
		})
	}
	// kubelet's probe carries no token: answered, with nothing in it.
	res, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent || res.ContentLength > 0 {
		t.Errorf("GET /healthz: %d, %d bytes; want 204 and nothing", res.StatusCode, res.ContentLength)
	}
	if _, err := sampler.NewClient(srv.URL, "short", ""); err == nil {
		t.Error("a client with a 5-character token")
	}
	c, err := sampler.NewClient(srv.URL, token+"x", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(context.Background()); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("ping with the wrong token: %v", err)
	}
}

// spinning starts a container spinning under --cpus 0.5 for 20 s, removed
// when the test ends, and returns its id and pid.
func spinning(t *testing.T) (string, int) {
	t.Helper()
	eng, image, _ := enginetest.Engine(t)
	lane := specs.PlannedLane{Workload: specs.Workload{Kind: specs.KindSpin, Threads: 1, Seconds: 20},
		Resources: specs.Resources{NanoCPUs: 5e8}, Target: -1}
	c, pid := enginetest.StartLane(t, eng, image, "sampler-"+strings.ToLower(t.Name()), lane)
	return c.ID, pid
}

// TestSamplerStream reads a real container's cgroup files through the
// sampler: the first reading comes with Open, each later one the tick
// after it was asked for, on this host's clock; a limit's file reads
// back what the engine wrote, and a name that is no cgroup file is
// refused.
func TestSamplerStream(t *testing.T) {
	_, _, host := enginetest.Engine(t)
	ctx := context.Background()
	id, pid := spinning(t)
	cl, err := sampler.NewClient(serve(t).URL, token, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := cl.Open(ctx, id, pid)
	if err != nil {
		t.Fatal(err)
	}
	defer s.(io.Closer).Close()
	first, err := s.Read()
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(first.At); d < 0 || d > time.Second {
		t.Errorf("the first reading is %v old on this host's clock", d)
	}
	var prev = first
	for i := range 8 {
		time.Sleep(250 * time.Millisecond)
		got, err := s.Read()
		if err != nil {
			t.Fatalf("reading %d: %v", i+1, err)
		}
		if !got.At.After(prev.At) || got.CPUNs < prev.CPUNs {
			t.Errorf("reading %d at %v with %d ns of CPU after one at %v with %d", i+1, got.At, got.CPUNs, prev.At, prev.CPUNs)
		}
		prev = got
	}
	// Never the same reading twice, however soon the next read.
	if again, err := s.Read(); err == nil && !again.At.After(prev.At) {
		t.Errorf("a reading at %v after one at %v", again.At, prev.At)
	}
	if prev.HasPressure != host.CgroupV2() {
		t.Errorf("pressure in the readings: %v on cgroup v%s (PSI is v2's)", prev.HasPressure, host.Cgroup)
	}
	cores := float64(prev.CPUNs-first.CPUNs) / float64(prev.At.Sub(first.At).Nanoseconds())
	if cores < 0.3 || cores > 0.6 {
		t.Errorf("a spin under --cpus 0.5 used %.2f cores through the sampler", cores)
	}
	// On v2 the kernel view names no controller: a file is in the
	// container's one directory.
	controller, file, want := "cpu", "cpu.cfs_quota_us", "50000"
	if host.CgroupV2() {
		controller, file, want = "", "cpu.max", "50000 100000"
	}
	if b, err := s.File(controller, file); err != nil || strings.TrimSpace(string(b)) != want {
		t.Errorf("%s: %q, %v; want %q", file, b, err, want)
	}
	for _, bad := range [][2]string{{"cpu", "../../../etc/passwd"}, {"net", "cpu.max"}, {"cpu", "tasks"}} {
		if _, err := s.File(bad[0], bad[1]); err == nil || !strings.Contains(err.Error(), "not a cgroup file") {
			t.Errorf("file %q of %q: %v", bad[1], bad[0], err)
		}
	}
	engine.Refresh(s)
	time.Sleep(250 * time.Millisecond)
	if _, err := s.Read(); err != nil {
		t.Errorf("after a refresh: %v", err)
	}
}

// TestSamplerStreamComesBack restarts the sampler under an open stream:
// reads fail, saying the stream was lost, until it is dialled again, then
// the readings go on where they were, on the same clock.
func TestSamplerStreamComesBack(t *testing.T) {
	id, pid := spinning(t)
	handler := (&sampler.Server{Token: token, Root: "/sys/fs/cgroup", Log: slog.Default()}).Handler()
	first := httptest.NewUnstartedServer(handler)
	conns := &tracked{Listener: first.Listener}
	first.Listener = conns
	first.Start()
	addr := first.Listener.Addr().String()
	cl, err := sampler.NewClient(first.URL, token, "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := cl.Open(context.Background(), id, pid)
	if err != nil {
		t.Fatal(err)
	}
	defer s.(io.Closer).Close()
	before, err := s.Read()
	if err != nil {
		t.Fatal(err)
	}
	// The sampler goes away: its listener and its streams (hijacked, so
	// the server's Close leaves them).
	first.Close()
	conns.closeAll()
	time.Sleep(300 * time.Millisecond)
	if _, err := s.Read(); err == nil || !strings.Contains(err.Error(), "stream lost") {
		t.Errorf("a read with the sampler gone: %v", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	second := httptest.NewUnstartedServer(handler)
	second.Listener.Close()
	second.Listener = ln
	second.Start()
	defer second.Close()
	// A reading asked for before the sampler went may still be taken
	// first; then come the ones after the gap.
	var after engine.Counters
	enginetest.WaitFor(t, 10*time.Second, "the stream to come back", func() bool {
		time.Sleep(250 * time.Millisecond)
		c, err := s.Read()
		if err == nil {
			if !c.At.After(after.At) {
				t.Errorf("a reading at %v after one at %v", c.At, after.At)
			}
			after = c
		}
		return err == nil && after.At.Sub(before.At) > time.Second
	})
	if after.CPUNs <= before.CPUNs {
		t.Errorf("after the gap: a reading %v later with %d ns of CPU, before it %d", after.At.Sub(before.At), after.CPUNs, before.CPUNs)
	}
	if d := time.Since(after.At); d < 0 || d > time.Second {
		t.Errorf("a reading after the gap is %v old on this host's clock", d)
	}
}

// tracked is a listener that can close every connection it accepted.
type tracked struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (l *tracked) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

func (l *tracked) closeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		_ = c.Close()
	}
}

// TestSamplerOverTLS: a client given the CA that signed the sampler's
// certificate reaches it over https; one without it is refused by TLS, not
// let through.
func TestSamplerOverTLS(t *testing.T) {
	srv := httptest.NewTLSServer((&sampler.Server{Token: token, Root: "/sys/fs/cgroup", Log: slog.Default()}).Handler())
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := sampler.NewClient(srv.URL, token, ca)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(context.Background()); err != nil {
		t.Errorf("with the CA: %v", err)
	}
	c, err = sampler.NewClient(srv.URL, token, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(context.Background()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: %v", err)
	}
	if _, err := sampler.NewClient("http://"+srv.Listener.Addr().String(), token, ca); err == nil {
		t.Error("a CA file for an http:// sampler")
	}
}
