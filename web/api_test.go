package web

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab"
	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/store"
	"github.com/limitlab/limitlab/internal/workshop"
)

// testClient keeps cookies, so that a test is one participant.
var testClient = func() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar}
}()

// newServer serves the real router over a runner on the real engine, with
// a store in a fresh directory.
func newServer(t testing.TB) (*httptest.Server, *workshop.Manager) {
	return newServerWith(t, nil)
}

// newServerWith is newServer with the router's deps and the runner's
// options changed first.
func newServerWith(t testing.TB, deps func(*Deps), options ...func(*workshop.Options)) (*httptest.Server, *workshop.Manager) {
	t.Helper()
	m := storedManager(t, options...)
	return serve(t, m, deps), m
}

// storedManager is a manager on the real engine with a store of its own.
func storedManager(t testing.TB, options ...func(*workshop.Options)) *workshop.Manager {
	t.Helper()
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() }) // after the manager's shutdown: cleanups run last first
	return enginetest.Manager(t, append([]func(*workshop.Options){func(o *workshop.Options) { o.Store = st }}, options...)...)
}

// serve serves the real router over m as the server serves it: through
// Listener.
func serve(t testing.TB, m *workshop.Manager, deps func(*Deps)) *httptest.Server {
	return serveConns(t, m, deps, 0)
}

// serveConns serves the router with its listener holding at most maxConns
// connections (MaxConns if zero), as -max-conns sets it, and as many from
// one address (DefaultConnsPerAddress if zero): a keynote's audience
// behind one NAT.
func serveConns(t testing.TB, m *workshop.Manager, deps func(*Deps), maxConns int) *httptest.Server {
	d := Deps{Runs: m, Pool: m.Pool(), Changes: m.Changes(), History: m.Archive(), Featured: m.Featured(), Finder: m.Finder(), Static: limitlab.Static(), AllowedHosts: LoopbackHosts}
	if deps != nil {
		deps(&d)
	}
	srv := httptest.NewUnstartedServer(NewRouter(d))
	srv.Listener = Listener(srv.Listener, ListenOptions{MaxConns: maxConns, PerAddress: maxConns, TrustedProxies: d.TrustedProxies})
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func postJSON(t testing.TB, url, body string) (int, []byte) {
	t.Helper()
	status, b := postWith(t, testClient, url, body)
	return status, []byte(b)
}

func getJSON(t testing.TB, url string, v any) int {
	t.Helper()
	res, err := testClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: decode: %v", url, err)
	}
	return res.StatusCode
}

func TestCreateRunRejectsInvalidSpecs(t *testing.T) {
	srv, _ := newServer(t)
	before := enginetest.Labelled(t, "")
	tests := []struct {
		name, body  string
		lane        int
		field, part string
	}{
		{"malformed JSON", `{"lanes": [{"workload": `, -1, "spec", "ends before the value does"},
		{"empty body", ``, -1, "spec", "empty body"},
		{"cpus above the host", `{"lanes": [{"workload": {"kind": "md5"}}, {"workload": {"kind": "md5"}, "limits": {"cpus": "64"}}]}`, 1, "cpus", "Range of CPUs"},
		{"memory below the floor", `{"lanes": [{"workload": {"kind": "mem"}, "limits": {"memory": "4m"}}]}`, 0, "memory", "Minimum memory limit allowed is 6MB"},
		{"unknown workload", `{"lanes": [{"workload": {"kind": "fio"}}]}`, 0, "workload.kind", "unknown workload"},
		{"misspelt limit", `{"lanes": [{"workload": {"kind": "md5"}, "limits": {"cpu_shares": 512}}]}`, 0, "cpu_shares", "unknown field"},
		{"one bad lane of three", `{"mode": "parallel", "lanes": [{"workload": {"kind": "spin"}}, {"workload": {"kind": "spin"}}, {"workload": {"kind": "spin"}, "limits": {"cpuset-cpus": "7"}}]}`, 2, "cpuset-cpus", "Requested CPUs are not available"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := postJSON(t, srv.URL+"/api/runs", tt.body)
			if status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", status, body)
			}
			var got struct{ Errors specs.Errors }
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("body %s: %v", body, err)
			}
			for _, e := range got.Errors {
				if e.Lane == tt.lane && e.Field == tt.field && strings.Contains(e.Message, tt.part) {
					return
				}
			}
			t.Errorf("errors %v: none on lane %d field %q containing %q", got.Errors, tt.lane, tt.field, tt.part)
		})
	}
	if after := enginetest.Labelled(t, ""); after != before {
		t.Errorf("invalid specs changed the labelled containers from %d to %d", before, after)
	}
	var list struct{ Runs []runner.RunView }
	getJSON(t, srv.URL+"/api/runs", &list)
	if len(list.Runs) != 0 {
		t.Errorf("invalid specs created runs: %+v", list.Runs)
	}
}

func TestRunOverTheAPI(t *testing.T) {
	srv, _ := newServer(t)
	status, body := postJSON(t, srv.URL+"/api/runs", `{"name": "api run", "mode": "parallel", "duration": "20s",
	  "lanes": [{"name": "free", "workload": {"kind": "spin", "seconds": 1.5}},
	            {"name": "quarter", "workload": {"kind": "spin", "seconds": 1.5}, "limits": {"cpus": "0.25", "memory": "32m"}}]}`)
	if status != http.StatusCreated {
		t.Fatalf("status %d: %s", status, body)
	}
	var created struct{ ID string }
	if err := json.Unmarshal(body, &created); err != nil || created.ID == "" {
		t.Fatalf("body %s: %v", body, err)
	}
	var v runner.RunView
	enginetest.WaitFor(t, time.Minute, "the run to end", func() bool {
		getJSON(t, srv.URL+"/api/runs/"+created.ID, &v)
		return v.State != runner.StateQueued && v.State != runner.StateRunning
	})
	if v.State != runner.StateDone {
		t.Fatalf("state %s: %s", v.State, v.Error)
	}
	q := v.Lanes[1]
	if q.Applied == nil || q.Applied.NanoCPUs != 25e7 || q.Applied.Memory != 32<<20 {
		t.Errorf("applied limits %+v", q.Applied)
	}
	if !strings.Contains(q.DockerRun, "--cpus 0.25 --memory 32m") {
		t.Errorf("docker_run %q", q.DockerRun)
	}
	for _, l := range v.Lanes {
		if l.ExitCode == nil || *l.ExitCode != 0 || l.WallSeconds < 1.4 || l.Throughput <= 0 {
			t.Errorf("lane %s: exit %v wall %g throughput %g", l.Name, l.ExitCode, l.WallSeconds, l.Throughput)
		}
	}
	// A quarter of a CPU for 1.5 s is about 0.375 s of CPU; the free lane
	// gets a whole CPU.
	if cpu := q.UserSeconds + q.SysSeconds; cpu > 0.6 {
		t.Errorf("cpus=0.25 lane used %.2fs of CPU in 1.5s", cpu)
	}
	if q.ThrottledPeriods == 0 {
		t.Error("cpus=0.25 lane was never throttled")
	}

	var list struct{ Runs []runner.RunView }
	getJSON(t, srv.URL+"/api/runs", &list)
	if len(list.Runs) != 1 || list.Runs[0].ID != created.ID {
		t.Errorf("list = %+v", list.Runs)
	}
	for _, path := range []string{"/runs/" + created.ID, "/runs/" + created.ID + "/results", "/"} {
		res, err := testClient.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !bytes.Contains(page, []byte("api run")) && !bytes.Contains(page, []byte("quarter")) {
			t.Errorf("GET %s: %d\n%.300s", path, res.StatusCode, page)
		}
	}
	if n := enginetest.Labelled(t, created.ID); n != 0 {
		t.Errorf("%d containers of the run remain", n)
	}
}

func TestHostEndpoint(t *testing.T) {
	srv, _ := newServer(t)
	var h engine.HostView
	if status := getJSON(t, srv.URL+"/api/host", &h); status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	if h.CPUs < 1 || h.APIVersion == "" || h.EngineVersion == "" || h.CgroupVersion == "" {
		t.Errorf("host %+v", h)
	}
	if h.IOThrottle.Supported && h.DataRootDevice == "" {
		t.Errorf("throttles supported but no data root device: %s", h.DataRootNote)
	}
	if !h.IOWeight.Supported && h.IOWeight.Reason == "" {
		t.Error("no IO weight support, and no reason given")
	}
	for _, field := range []string{"cpus", "cpu-shares", "cpuset-cpus", "cpu-period", "cpu-quota", "memory", "memory-swap", "memory-reservation", "pids-limit",
		"device-read-bps", "device-write-bps", "device-read-iops", "device-write-iops", "blkio-weight", "blkio-weight-device"} {
		if _, ok := h.Limits[field]; !ok {
			t.Errorf("no support entry for %s", field)
		}
	}
}

// Without a pool the one engine is listed, up, with its host.
func TestEnginesEndpointWithoutAPool(t *testing.T) {
	srv, _ := newServer(t)
	var got struct{ Engines []workshop.EngineView }
	if status := getJSON(t, srv.URL+"/api/engines", &got); status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	if len(got.Engines) != 1 || !got.Engines[0].Up || got.Engines[0].Host == nil || got.Engines[0].Host.Description == "" || got.Engines[0].State != workshop.EngineReady || got.Engines[0].Name != "default" {
		t.Errorf("engines %+v", got.Engines)
	}
}

func TestRequestChecks(t *testing.T) {
	srv, _ := newServer(t)
	do := func(method, path, host, origin string) int {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		res, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	tests := []struct {
		name, method, path, host, origin string
		want                             int
	}{
		{"rebinding host refused", "GET", "/api/host", "evil.example:8080", "", http.StatusMisdirectedRequest},
		{"localhost accepted", "GET", "/api/host", "localhost:8080", "", http.StatusOK},
		{"cross-origin post refused", "POST", "/api/runs", "", "http://evil.example", http.StatusForbidden},
		{"same-origin post reaches validation", "POST", "/api/runs", "", srv.URL, http.StatusBadRequest},
		{"unknown run", "GET", "/api/runs/nope", "", "", http.StatusNotFound},
		{"stop of an unknown run", "POST", "/api/runs/nope/stop", "", "", http.StatusNotFound},
		{"static asset", "GET", "/static/app.css", "", "", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := do(tt.method, tt.path, tt.host, tt.origin); got != tt.want {
				t.Errorf("%s %s: status %d, want %d", tt.method, tt.path, got, tt.want)
			}
		})
	}
}
