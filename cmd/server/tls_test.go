package main

import (
	"bytes"
	"crypto/tls"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/enginetest"
)

// syncBuffer is a process's output, read by the test while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDashboardServesTLS: with -tls-cert and -tls-key the real binary
// answers over https, its cookies are Secure, and plain http gets no page.
// Listening beyond loopback with neither TLS nor a trusted proxy, it warns.
func TestDashboardServesTLS(t *testing.T) {
	bin, err := enginetest.BuildBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, key, pool := enginetest.SelfSigned(t, t.TempDir())
	addr := freeAddr(t)
	cmd := exec.Command(bin, "-addr", addr, "-data", t.TempDir(), "-tls-cert", cert, "-tls-key", key)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	https := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	base := "https://" + addr
	enginetest.WaitFor(t, 2*time.Minute, "the server to answer over https", func() bool {
		res, err := https.Get(base + "/api/host")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	res, err := https.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	secure := false
	for _, c := range res.Cookies() {
		secure = secure || (c.Name == "__Host-limitlab_participant" && c.Secure && c.Path == "/" && c.Domain == "")
	}
	if !secure {
		t.Errorf("the participant cookie over https is not a Secure __Host- cookie: %v", res.Header["Set-Cookie"])
	}
	if res, err := http.Get("http://" + addr + "/"); err == nil {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if strings.Contains(string(b), "Limit Lab") {
			t.Errorf("a page over plain http from a TLS listener: %d", res.StatusCode)
		}
	}
	if err := terminate(t, cmd, exited); err != nil {
		t.Errorf("exit: %v\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "plain http") {
		t.Errorf("a warning about plain http on loopback over TLS:\n%s", out.String())
	}

	// Beyond loopback, in clear, with no proxy: a warning. (It listens on
	// every address only for the moment it takes to start.)
	open := exec.Command(bin, "-addr", "0.0.0.0:"+strings.Split(freeAddr(t), ":")[1], "-allow-host", "lab.example.org", "-data", t.TempDir())
	var warned syncBuffer
	open.Stdout, open.Stderr = &warned, &warned
	if err := open.Start(); err != nil {
		t.Fatal(err)
	}
	openExited := make(chan error, 1)
	go func() { openExited <- open.Wait() }()
	t.Cleanup(func() { _ = open.Process.Kill() })
	enginetest.WaitFor(t, 2*time.Minute, "the warning", func() bool { return strings.Contains(warned.String(), "listening") })
	_ = terminate(t, open, openExited)
	if !strings.Contains(warned.String(), "plain http") || !strings.Contains(warned.String(), "-tls-cert") {
		t.Errorf("no warning when listening beyond loopback in clear:\n%s", warned.String())
	}
}
