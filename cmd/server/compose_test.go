package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/moby/moby/client"
)

// composeImage finds docker-compose and builds limitlab:local as the
// docs/deploying.md says (make image: FROM scratch, nothing pulled); it returns
// docker-compose and the repository's root.
func composeImage(t *testing.T) (compose, root string) {
	t.Helper()
	compose, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Fatal("docker-compose is needed for this test: apt-get install -y docker-compose")
	}
	root, _ = filepath.Abs("../..")
	image := exec.Command("make", "image")
	image.Dir = root
	if out, err := image.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	return compose, root
}

// TestComposeDeployment builds the image as the docs/deploying.md says (make image:
// FROM scratch, nothing pulled), brings docker-compose.yml up, checks that
// the dashboard reads cgroup files and runs a lab to its verdict, brings
// it down, and checks that nothing is left: no dashboard, no experiment
// container, no volume.
func TestComposeDeployment(t *testing.T) {
	eng, _, _ := enginetest.Engine(t)
	compose, root := composeImage(t)
	port := strings.Split(freeAddr(t), ":")[1]
	project := []string{"-p", "limitlabcompose", "-f", "docker-compose.yml"}
	up := exec.Command(compose, append(project, "up", "-d")...)
	up.Dir, up.Env = root, append(os.Environ(), "LIMITLAB_PORT="+port)
	if out, err := up.CombinedOutput(); err != nil {
		t.Fatalf("docker-compose up: %v\n%s", err, out)
	}
	down := func() {
		cmd := exec.Command(compose, append(project, "down", "-v", "--timeout", "40")...)
		cmd.Dir, cmd.Env = root, append(os.Environ(), "LIMITLAB_PORT="+port)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("docker-compose down: %v\n%s", err, out)
		}
	}
	downed := false
	t.Cleanup(func() {
		if !downed {
			down()
		}
	})
	base := "http://127.0.0.1:" + port
	var host struct {
		StatsSource string `json:"stats_source"`
		StatsNote   string `json:"stats_note"`
	}
	enginetest.WaitFor(t, 3*time.Minute, "the dashboard in compose to answer", func() bool {
		res, err := http.Get(base + "/api/host")
		if err != nil {
			return false
		}
		defer res.Body.Close()
		return res.StatusCode == http.StatusOK && json.NewDecoder(res.Body).Decode(&host) == nil
	})
	if host.StatsSource != "cgroup" {
		t.Errorf("in compose, stats come from %q (%s), want the cgroup files", host.StatsSource, host.StatsNote)
	}
	id := submit(t, base, `{"lab": "shares-spare-cpu"}`)
	var v struct {
		State   string
		Ended   bool
		Verdict *struct {
			Judged      bool
			Explanation string
		}
		Lanes []struct {
			StatsSource string `json:"stats_source"`
		}
	}
	waitEnded(t, base, id, 3*time.Minute, &v)
	if v.State != "done" || v.Verdict == nil || !v.Verdict.Judged {
		t.Errorf("the lab ended %s with verdict %+v", v.State, v.Verdict)
	}
	for i, l := range v.Lanes {
		if l.StatsSource != "cgroup" {
			t.Errorf("lane %d sampled from %q, want its cgroup files", i, l.StatsSource)
		}
	}
	down()
	downed = true
	ctx := context.Background()
	list, err := eng.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", "com.docker.compose.project=limitlabcompose")})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(list.Items) + enginetest.Labelled(t, ""); n != 0 {
		t.Errorf("%d containers left after docker-compose down", n)
	}
	vols, err := eng.VolumeList(ctx, client.VolumeListOptions{Filters: make(client.Filters).Add("label", "com.docker.compose.project=limitlabcompose")})
	if err != nil {
		t.Fatal(err)
	}
	if len(vols.Items) != 0 {
		t.Errorf("%d volumes left after docker-compose down -v", len(vols.Items))
	}
}
