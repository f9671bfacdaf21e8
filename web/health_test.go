package web

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The probes answer whatever Host they name (kubelet names the pod's
// address), set no cookie, and /readyz says why the server is not ready
// while it is not.
func TestHealthAndReadiness(t *testing.T) {
	var why error = errors.New("none of the 1 engines is up yet")
	srv, _, _ := newFakeServer(t, func(d *Deps) {
		d.AllowedHosts = []string{"lab.example.org"}
		d.Ready = func() error { return why }
	})
	get := func(path string) (int, string, *http.Response) {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Host = "10.0.0.7:8080"
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b), res
	}
	if status, body, res := get("/healthz"); status != http.StatusOK || body != "ok\n" || len(res.Cookies()) != 0 {
		t.Errorf("/healthz: %d %q, cookies %v", status, body, res.Cookies())
	}
	if status, body, _ := get("/readyz"); status != http.StatusServiceUnavailable || !strings.Contains(body, "no") || !strings.Contains(body, "engines is up") {
		t.Errorf("/readyz while not ready: %d %q", status, body)
	}
	why = nil
	if status, body, _ := get("/readyz"); status != http.StatusOK || body != "ready\n" {
		t.Errorf("/readyz once ready: %d %q", status, body)
	}
	if status, _, _ := get("/"); status != http.StatusMisdirectedRequest {
		t.Errorf("a page for a Host not allowed: %d, want the router's guards as before", status)
	}
}

// Every page names the build's version at its foot.
func TestPagesShowTheVersion(t *testing.T) {
	srv, _, _ := newFakeServer(t, nil)
	res, body := get(t, srv.URL+"/")
	if res.StatusCode != http.StatusOK || !strings.Contains(body, `data-testid="version">Limit Lab `+Version()+`</footer>`) {
		t.Errorf("the home page does not name version %q", Version())
	}
}
