package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/testbed"
	"github.com/limitlab/limitlab/internal/workshop"
)

// TestServerWithAPool runs the binary on an engines file of two engines
// of the test's own: both are probed and listed, two runs run at once, one
// on each, and the pages name them.
func TestServerWithAPool(t *testing.T) {
	bin, err := enginetest.BuildBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ds := make([]*testbed.Dockerd, 2)
	var wg sync.WaitGroup
	for i, n := range []string{"sa", "sb"} {
		wg.Add(1)
		go func() { defer wg.Done(); ds[i] = enginetest.StartDockerd(t, n, testbed.DockerdOptions{}) }()
	}
	wg.Wait()
	if ds[0] == nil || ds[1] == nil {
		t.FailNow()
	}
	// sb's containers are read by a sampler beside it, as a remote
	// engine's would be.
	dir := t.TempDir()
	smpAddr, tokenFile, _ := startSampler(t, bin)
	file := filepath.Join(dir, "engines.json")
	body := `{"engines": [{"name": "sa", "host": "` + ds[0].Host + `"}, {"name": "sb", "host": "` + ds[1].Host + `",
	  "sampler": {"url": "http://` + smpAddr + `", "token_file": "` + tokenFile + `"}}]}`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, exited, base := startServer(t, bin, t.TempDir(), "-engines", file)

	var engines struct{ Engines []workshop.EngineView }
	getJSON(t, base+"/api/engines", &engines)
	if len(engines.Engines) != 2 || !engines.Engines[0].Up || !engines.Engines[1].Up {
		t.Fatalf("GET /api/engines: %+v", engines)
	}
	if engines.Engines[0].Host.StatsSource != "cgroup" || engines.Engines[1].Host.StatsSource != "sampler" {
		t.Errorf("stats from %q and %q, want sa's cgroup files read here and sb's through its sampler", engines.Engines[0].Host.StatsSource, engines.Engines[1].Host.StatsSource)
	}
	spec := `{"name": "pooled", "duration": "60s", "lanes": [{"workload": {"kind": "spin", "seconds": 3}, "limits": {"cpus": "0.25"}}]}`
	a, b := submit(t, base, spec), submit(t, base, spec)
	var va, vb struct {
		State, Engine string
		Ended         bool
		Lanes         []struct {
			StatsSource string `json:"stats_source"`
		}
		StartedAt time.Time `json:"started_at"`
		EndedAt   time.Time `json:"ended_at"`
	}
	waitEnded(t, base, a, time.Minute, &va)
	waitEnded(t, base, b, time.Minute, &vb)
	if va.State != "done" || vb.State != "done" || va.Engine == vb.Engine || va.Engine == "" {
		t.Fatalf("runs %+v and %+v: want both done, on the two engines", va, vb)
	}
	for _, v := range []struct {
		engine string
		source string
	}{{va.Engine, va.Lanes[0].StatsSource}, {vb.Engine, vb.Lanes[0].StatsSource}} {
		if want := map[string]string{"sa": "cgroup", "sb": "sampler"}[v.engine]; v.source != want {
			t.Errorf("the run on %s read its lane from %q, want %q", v.engine, v.source, want)
		}
	}
	if !va.StartedAt.Before(vb.EndedAt) || !vb.StartedAt.Before(va.EndedAt) {
		t.Errorf("the runs did not overlap: %v–%v and %v–%v", va.StartedAt, va.EndedAt, vb.StartedAt, vb.EndedAt)
	}
	page := getPage(t, base+"/engines")
	for _, want := range []string{`data-engine="sa"`, `data-engine="sb"`, ds[0].Host} {
		if !strings.Contains(page, want) {
			t.Errorf("/engines lacks %s", want)
		}
	}
	// The export keeps the engine, and compare says the two ran apart.
	var exported struct {
		Run struct{ Engine string }
	}
	getJSON(t, base+"/api/runs/"+a+"/export?format=json", &exported)
	if exported.Run.Engine != va.Engine {
		t.Errorf("run %s ran on %s; its export says %q", a, va.Engine, exported.Run.Engine)
	}
	if page := getPage(t, base+"/compare?a="+a+"&b="+b); !strings.Contains(page, `data-testid="compare-engines"`) {
		t.Errorf("compare of runs on %s and %s does not say they ran on different engines", va.Engine, vb.Engine)
	}
	if err := terminate(t, cmd, exited); err != nil {
		t.Errorf("server exited with %v after SIGTERM", err)
	}
}

// A broken engines file stops the server before it serves, naming the
// engine and the field.
func TestServerRefusesABrokenEnginesFile(t *testing.T) {
	bin, err := enginetest.BuildBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "engines.json")
	if err := os.WriteFile(file, []byte(`{"engines": [{"name": "lab-1", "host": "tcp://10.0.0.9:2375"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-addr", freeAddr(t), "-data", t.TempDir(), "-engines", file).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `engine 1 ("lab-1"): tls:`) {
		t.Fatalf("server with a tcp engine without TLS: %v\n%s", err, out)
	}
}

// startSampler runs `limitlab sampler` on loopback with a token of its
// own and the extra flags given, killed when the test ends, and returns its
// address, its token file and its process once it listens.
func startSampler(t testing.TB, bin string, extra ...string) (addr, tokenFile string, p *os.Process) {
	t.Helper()
	tokenFile = filepath.Join(t.TempDir(), "sampler.token")
	if err := os.WriteFile(tokenFile, []byte("sampler-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr = freeAddr(t)
	smp := exec.Command(bin, append([]string{"sampler", "-listen", addr, "-token-file", tokenFile}, extra...)...)
	smp.Stderr = os.Stderr
	if err := smp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = smp.Process.Kill(); _ = smp.Wait() })
	enginetest.WaitFor(t, 10*time.Second, "the sampler to listen", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return addr, tokenFile, smp.Process
}

// getPage is the body of a page that answers 200.
func getPage(t testing.TB, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, res.StatusCode, err)
	}
	return string(b)
}

func getJSON(t testing.TB, url string, v any) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}
