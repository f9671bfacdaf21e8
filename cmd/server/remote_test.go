package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/limitlab/limitlab/internal/enginetest"
)

// remoteEngine sets DOCKER_HOST to the engine through a TCP socket on
// loopback (socat in front of its unix socket), so that the server takes
// it for a remote engine, and builds the server.
func remoteEngine(t *testing.T) (bin string) {
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
	bin, err = enginetest.BuildBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_HOST", "tcp://"+tcp)
	enginetest.WaitFor(t, 10*time.Second, "socat to listen", func() bool {
		out, err := exec.Command("docker", "version", "--format", "{{.Server.Version}}").CombinedOutput()
		return err == nil && len(out) > 0
	})
	return bin
}

// TestRemoteEngineIsStatedHonestly points the server at the engine through
// a TCP socket on loopback (socat in front of the engine's unix socket), so
// that it cannot use the cgroup files: GET /api/host and the run say that
// samples come from the engine's stats once a second and what they lack,
// and a run still ends with its samples.
func TestRemoteEngineIsStatedHonestly(t *testing.T) {
	bin := remoteEngine(t)
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

// TestRemoteEngineWithASampler runs the sampler as deploy/sampler's
// compose service says, beside the engine the server reaches only over
// TCP: the host and the run say that the samples come from the cgroup
// files through the sampler, at the run's interval, not once a second; the
// lane's limits are read back from the kernel's files; a server given the
// wrong token does not start; and compose down leaves nothing.
func TestRemoteEngineWithASampler(t *testing.T) {
	bin := remoteEngine(t)
	eng, _, _ := enginetest.Engine(t)
	compose, root := composeImage(t)
	const token = "sampler-token-0123456789"
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "sampler.token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, down := composeSampler(t, compose, root, token)
	_, _, base := startServer(t, bin, t.TempDir(), "-sampler", "http://"+addr, "-sampler-token-file", tokenFile)
	var host struct {
		StatsSource string `json:"stats_source"`
		StatsNote   string `json:"stats_note"`
		Samples     struct {
			IntervalMs int64 `json:"interval_ms"`
		}
	}
	getJSON(t, base+"/api/host", &host)
	if host.StatsSource != "sampler" || host.Samples.IntervalMs != 0 || !strings.Contains(host.StatsNote, addr) {
		t.Errorf("with a sampler: %+v, want stats from the sampler at %s at the run's interval", host, addr)
	}
	id := submit(t, base, `{"name": "sampled", "duration": "30s", "lanes": [{"workload": {"kind": "spin", "seconds": 4}, "limits": {"cpus": "0.5"}}]}`)
	var v struct {
		State     string
		StatsNote string `json:"stats_note"`
		Lanes     []struct {
			StatsSource string `json:"stats_source"`
			Kernel      struct {
				Files []struct {
					File    string `json:"file"`
					Present bool   `json:"present"`
					Holds   bool   `json:"holds"`
					Got     string `json:"got"`
				} `json:"files"`
				Note string `json:"note"`
			} `json:"kernel"`
		}
	}
	waitEnded(t, base, id, 2*time.Minute, &v)
	if v.State != "done" || v.Lanes[0].StatsSource != "sampler" || v.StatsNote != "" {
		t.Errorf("the run: %+v", v)
	}
	held := 0
	for _, f := range v.Lanes[0].Kernel.Files {
		if f.Present && f.Holds {
			held++
		}
	}
	if held == 0 || v.Lanes[0].Kernel.Note != "" {
		t.Errorf("the lane's limits read back through the sampler: %+v", v.Lanes[0].Kernel)
	}
	res, err := http.Get(base + "/api/runs/" + id + "/export?format=csv")
	if err != nil {
		t.Fatal(err)
	}
	csv, _ := io.ReadAll(res.Body)
	res.Body.Close()
	// 4 s at 250 ms is 16 intervals; the engine's stats give 4.
	rows := strings.Count(string(csv), "\n") - 1
	if rows < 12 {
		t.Errorf("%d samples through the sampler in 4 s, want about 16", rows)
	}
	t.Logf("%d samples in 4 s; %d of the lane's limit files read back and holding", rows, held)

	wrong := filepath.Join(dir, "wrong.token")
	if err := os.WriteFile(wrong, []byte("not-the-sampler-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-addr", freeAddr(t), "-data", t.TempDir(), "-sampler", "http://"+addr, "-sampler-token-file", wrong).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "401") {
		t.Errorf("a server with the wrong sampler token: %v\n%s", err, out)
	}
	down()
	list, err := eng.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", "com.docker.compose.project=limitlabsampler")})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(list.Items) + enginetest.Labelled(t, ""); n != 0 {
		t.Errorf("%d containers left after docker-compose down", n)
	}
}

// composeSampler starts the sampler as deploy/sampler's compose file
// runs it, with token, and waits for it to listen; down stops it, and
// runs at the test's end if the test did not.
func composeSampler(t *testing.T, compose, root, token string) (addr string, down func()) {
	t.Helper()
	port := strings.Split(freeAddr(t), ":")[1]
	addr = "127.0.0.1:" + port
	project := []string{"-p", "limitlabsampler", "-f", "deploy/sampler/docker-compose.yml"}
	composeCmd := func(args ...string) *exec.Cmd {
		cmd := exec.Command(compose, append(project, args...)...)
		cmd.Dir, cmd.Env = root, append(os.Environ(), "LIMITLAB_SAMPLER_TOKEN="+token, "LIMITLAB_SAMPLER_PORT="+port, "DOCKER_HOST=")
		return cmd
	}
	if out, err := composeCmd("up", "-d").CombinedOutput(); err != nil {
		t.Fatalf("docker-compose up: %v\n%s", err, out)
	}
	downed := false
	down = func() {
		downed = true
		if out, err := composeCmd("down", "--timeout", "10").CombinedOutput(); err != nil {
			t.Errorf("docker-compose down: %v\n%s", err, out)
		}
	}
	t.Cleanup(func() {
		if !downed {
			down()
		}
	})
	enginetest.WaitFor(t, time.Minute, "the sampler in compose to listen", func() bool {
		res, err := http.Get("http://" + addr + "/v1/ping")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusUnauthorized // no token: refused
	})
	return addr, down
}
