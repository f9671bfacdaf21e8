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

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/workshop"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// facilitatorImage builds the test's own service (testdata/facilitator, a
// static HTTP server) into an image FROM scratch on the engine, removed
// when the test ends: nothing is pulled.
func facilitatorImage(t *testing.T, name string) {
	t.Helper()
	enginetest.Engine(t)
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "svc"), "./testdata/facilitator")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	df := "FROM scratch\nCOPY svc /svc\nENTRYPOINT [\"/svc\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("docker", "build", "-q", "-t", name, dir).CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", name).Run() })
}

// postFind posts a search to a server's API and returns the status and
// body.
func postFind(t *testing.T, base, spec string) (int, []byte) {
	t.Helper()
	res, err := http.Post(base+"/api/find", "application/json", strings.NewReader(spec))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// TestAFacilitatorsImageRunsUnderASearch: a lab file names an image the
// server allows (-allow-image) with its port and command; a search of that
// lab runs it, hardened as every lane is, with the load lane in its
// network namespace and no other network, to an answer within the
// search's bounds, every probe linked to its run. A participant's spec
// that names an image is refused, naming the field, and so is a lab whose
// image the server does not allow.
func TestAFacilitatorsImageRunsUnderASearch(t *testing.T) {
	const image = "limitlab-test-facilitator:1"
	facilitatorImage(t, image)
	eng, _, _ := enginetest.Engine(t)
	labs := t.TempDir()
	lab := func(id, img string) string {
		return `{"id": "` + id + `", "title": "Right-size the facilitator's service", "topic": "services",
		  "question": "What --cpus does our own service need for 50 requests a second?",
		  "find": {"target": {"p99_ms": 50, "errors_pct": 1},
		           "search": {"limit": "cpus", "min": "0.1", "max": "1", "resolution": "0.3", "repeats": 1}},
		  "spec": {"name": "our service", "mode": "sequential", "lanes": [
		    {"name": "service", "workload": {"kind": "image", "image": "` + img + `", "port": 9090, "command": "-listen :9090 -hashes 60000"}},
		    {"name": "load", "workload": {"kind": "load", "target": "service", "rate": 50, "seconds": 4}}]}}`
	}
	for id, img := range map[string]string{"our-service": image, "not-allowed": "limitlab-test-other:1"} {
		if err := os.WriteFile(filepath.Join(labs, id+".json"), []byte(lab(id, img)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin, err := enginetest.BuildBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cmd, exited, base := startServer(t, bin, t.TempDir(), "-labs", labs, "-allow-image", image)
	defer func() {
		if err := terminate(t, cmd, exited); err != nil {
			t.Errorf("server exit: %v", err)
		}
	}()

	// A participant's own spec may not name an image, for a run or a
	// search; nor may a lab run an image the server does not allow.
	for _, c := range []struct{ path, body, field string }{
		{"/api/runs", `{"lanes": [{"name": "s", "workload": {"kind": "image", "image": "` + image + `", "port": 9090}}]}`, "workload.image"},
		{"/api/runs", `{"lanes": [{"name": "s", "workload": {"kind": "http", "image": "` + image + `"}}]}`, "workload.image"},
		{"/api/find", `{"service": {"kind": "image", "image": "` + image + `"}, "load": {"rate": 10, "seconds": 4},
		  "target": {"p99_ms": 50}, "search": {"limit": "cpus", "min": "0.1", "max": "1", "resolution": "0.3"}}`, "service.image"},
		{"/api/find", `{"lab": "not-allowed"}`, "workload.image"},
	} {
		res, err := http.Post(base+c.path, "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var got struct{ Errors []struct{ Field string } }
		if res.StatusCode != http.StatusBadRequest || json.Unmarshal(b, &got) != nil || len(got.Errors) != 1 || got.Errors[0].Field != c.field {
			t.Errorf("POST %s %s: %d %s, want 400 naming %s", c.path, c.body, res.StatusCode, b, c.field)
		}
	}
	if left := enginetest.LabelledContainers(t, ""); len(left) != 0 {
		t.Fatalf("containers after refused specs, want none started: %v", left)
	}

	code, b := postFind(t, base, `{"lab": "our-service"}`)
	var started struct{ ID string }
	if code != http.StatusAccepted && code != http.StatusCreated && code != http.StatusOK || json.Unmarshal(b, &started) != nil || started.ID == "" {
		t.Fatalf("POST /api/find: %d %s", code, b)
	}
	// While a probe runs: its containers as the engine holds them.
	svc, load := probeContainers(t, eng, image)
	hc := svc.HostConfig
	if svc.Config.User != engine.WorkloadUser || !hc.ReadonlyRootfs || len(hc.CapDrop) != 1 || hc.CapDrop[0] != "ALL" || hc.Privileged ||
		hc.NetworkMode != "none" || hc.PidsLimit == nil || *hc.PidsLimit <= 0 || !strings.Contains(strings.Join(hc.SecurityOpt, ","), "no-new-privileges") {
		t.Errorf("the facilitator's service is not hardened: user %q, host config %+v", svc.Config.User, hc)
	}
	if strings.Join(svc.Config.Cmd, " ") != "-listen :9090 -hashes 60000" || svc.Config.Labels[engine.LabelRun] == "" {
		t.Errorf("the service runs %q with labels %v", svc.Config.Cmd, svc.Config.Labels)
	}
	if want := "container:" + svc.ID; string(load.HostConfig.NetworkMode) != want {
		t.Errorf("the load's network is %q, want its service's (%s)", load.HostConfig.NetworkMode, want)
	}

	var v workshop.SearchView
	enginetest.WaitFor(t, 5*time.Minute, "the search to end", func() bool {
		res, err := http.Get(base + "/api/find/" + started.ID)
		if err != nil {
			return false
		}
		defer res.Body.Close()
		return json.NewDecoder(res.Body).Decode(&v) == nil && v.State != workshop.SearchRunning
	})
	t.Logf("search %s: %s, answer %+v", v.ID, v.State, v.Answer)
	checkProbeRuns(t, base, v, image)
	// 50 requests a second of about 6 ms of CPU each need more than the
	// range's floor of 0.1 CPUs: the answer lies above it.
	if v.State != workshop.SearchDone || v.Answer == nil || !v.Answer.Found || v.Answer.Limit <= 0.1 || v.Answer.Limit > 1 {
		t.Fatalf("search %s %s (%s): answer %+v", v.ID, v.State, v.Error, v.Answer)
	}
	if page := getPage(t, base+"/find/"+v.ID); !strings.Contains(page, image) {
		t.Errorf("the search's page does not name the facilitator's image")
	}
	if page := getPage(t, base+"/labs/our-service"); !strings.Contains(page, image) {
		t.Errorf("the lab's page does not name the facilitator's image")
	}
	enginetest.WaitFor(t, time.Minute, "the probes' containers to go", func() bool { return enginetest.Labelled(t, "") == 0 })
}

// probeContainers waits for a running probe's service and load
// containers, the service the one of the facilitator's image, and
// inspects them.
func probeContainers(t *testing.T, eng client.APIClient, image string) (svc, load container.InspectResponse) {
	t.Helper()
	enginetest.WaitFor(t, 2*time.Minute, "a probe's service and load containers", func() bool {
		list, err := eng.ContainerList(context.Background(), client.ContainerListOptions{Filters: make(client.Filters).Add("label", engine.LabelRun)})
		if err != nil {
			return false
		}
		var s, l *container.InspectResponse
		for _, c := range list.Items {
			ins, err := eng.ContainerInspect(context.Background(), c.ID, client.ContainerInspectOptions{})
			if err != nil {
				continue
			}
			if ins.Container.Config.Image == image {
				s = &ins.Container
			} else {
				l = &ins.Container
			}
		}
		if s != nil && l != nil {
			svc, load = *s, *l
			return true
		}
		return false
	})
	return svc, load
}

// checkProbeRuns checks that each probe of the search links to its run,
// whose service lane ran the facilitator's image to its end.
func checkProbeRuns(t *testing.T, base string, v workshop.SearchView, image string) {
	t.Helper()
	for _, p := range v.Probes {
		t.Logf("probe at %s: run %s, %+v", p.Text, p.Run, p.Result)
		if p.Run == "" || p.Result == nil {
			t.Errorf("probe at %s has no run or result: %+v", p.Text, p)
			continue
		}
		var run struct {
			Lanes []struct {
				Workload struct{ Kind, Image string }
				TimedOut bool `json:"timed_out"`
				ExitCode *int `json:"exit_code"`
			}
		}
		getJSON(t, base+"/api/runs/"+p.Run, &run)
		if len(run.Lanes) != 2 || run.Lanes[0].Workload.Kind != "image" || run.Lanes[0].Workload.Image != image ||
			run.Lanes[0].TimedOut || run.Lanes[0].ExitCode == nil {
			t.Errorf("probe run %s: lanes %+v", p.Run, run.Lanes)
		}
	}
}
