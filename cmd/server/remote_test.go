package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/enginetest"
)

// TestRemoteEngineIsStatedHonestly points the server at the engine through
// a TCP socket on loopback (socat in front of the engine's unix socket), so
// that it cannot use the cgroup files: GET /api/host and the run say that
// samples come from the engine's stats once a second and what they lack,
// and a run still ends with its samples.
func TestRemoteEngineIsStatedHonestly(t *testing.T) {
	enginetest.Engine(t)
	socat, err := exec.LookPath("socat")
	if err != nil {
		t.Fatal("socat is needed for this test: apt-get install -y socat")
	}
	tcp := freeAddr(t)
	proxy := exec.Command(socat, "TCP-LISTEN:"+strings.Split(tcp, ":")[1]+",bind=127.0.0.1,fork,reuseaddr", "UNIX-CONNECT:/var/run/docker.sock")
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Process.Kill(); _ = proxy.Wait() })
	bin, err := enginetest.BuildBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_HOST", "tcp://"+tcp)
	enginetest.WaitFor(t, 10*time.Second, "socat to listen", func() bool {
		out, err := exec.Command("docker", "version", "--format", "{{.Server.Version}}").CombinedOutput()
		return err == nil && len(out) > 0
	})
	_, _, base := startServer(t, bin, t.TempDir())
	var host struct {
		StatsSource string `json:"stats_source"`
		Samples     struct {
			IntervalMs int64 `json:"interval_ms"`
			Missing    []struct{ Signal, Why string }
		}
	}
	res, err := http.Get(base + "/api/host")
	if err != nil {
		t.Fatal(err)
	}
	_ = json.NewDecoder(res.Body).Decode(&host)
	res.Body.Close()
	if host.StatsSource != "engine" || host.Samples.IntervalMs != 1000 {
		t.Errorf("a remote engine: stats from %q every %d ms, want the engine's, every 1000 ms", host.StatsSource, host.Samples.IntervalMs)
	}
	if len(host.Samples.Missing) == 0 {
		t.Error("no signal said missing: the engine's stats carry no PSI on any cgroup version")
	}
	id := submit(t, base, `{"name": "remote", "duration": "30s", "lanes": [{"workload": {"kind": "spin", "seconds": 3}, "limits": {"cpus": "0.5"}}]}`)
	var v struct {
		Ended     bool
		State     string
		StatsNote string                    `json:"stats_note"`
		Missing   []struct{ Signal string } `json:"missing_signals"`
		Lanes     []struct {
			StatsSource string `json:"stats_source"`
		}
	}
	waitEnded(t, base, id, 2*time.Minute, &v)
	if v.State != "done" || v.Lanes[0].StatsSource != "engine" || !strings.Contains(v.StatsNote, "once a second") || len(v.Missing) == 0 {
		t.Errorf("the run: %+v", v)
	}
	res, err = http.Get(base + "/api/runs/" + id + "/export?format=csv")
	if err != nil {
		t.Fatal(err)
	}
	csv, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if rows := strings.Count(string(csv), "\n") - 1; rows < 2 {
		t.Errorf("%d samples from the engine's stats in 3 s, want some", rows)
	}
}
