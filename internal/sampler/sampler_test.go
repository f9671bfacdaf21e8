package sampler_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/sampler"
	"github.com/moby/moby/client"
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

// TestSamplerStream reads a real container's cgroup files through the
// sampler: the first reading comes with Open, each later one the tick
// after it was asked for, on this host's clock; a limit's file reads
// back what the engine wrote, and a name that is no cgroup file is
// refused.
func TestSamplerStream(t *testing.T) {
	eng, image, host := enginetest.Engine(t)
	ctx := context.Background()
	lane := experiments.PlannedLane{Workload: experiments.Workload{Kind: experiments.KindSpin, Threads: 1, Seconds: 20},
		Resources: experiments.Resources{NanoCPUs: 5e8}, Target: -1}
	c, err := engine.CreateLane(ctx, eng, "", "sampler-test", 0, lane, image, "")
	if c.ID != "" {
		t.Cleanup(func() {
			engine.RemoveRun(context.Background(), eng, "sampler-test", []string{c.ID}, []experiments.PlannedLane{lane}, slog.Default())
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	ins, err := eng.ContainerInspect(ctx, c.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := sampler.NewClient(serve(t).URL, token, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := cl.Open(ctx, c.ID, ins.Container.State.Pid, 250*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer s.(interface{ Close() error }).Close()
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
	if _, err := s.Read(); err == nil {
		t.Error("a second reading within the same tick: want none yet")
	}
	if prev.HasPressure != host.CgroupV2() {
		t.Errorf("pressure in the readings: %v on cgroup v%s (PSI is v2's)", prev.HasPressure, host.CgroupVersion)
	}
	cores := float64(prev.CPUNs-first.CPUNs) / float64(prev.At.Sub(first.At).Nanoseconds())
	if cores < 0.3 || cores > 0.6 {
		t.Errorf("a spin under --cpus 0.5 used %.2f cores through the sampler", cores)
	}
	controller, file, want := "cpu", "cpu.cfs_quota_us", "50000"
	if host.CgroupV2() {
		file, want = "cpu.max", "50000 100000"
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
