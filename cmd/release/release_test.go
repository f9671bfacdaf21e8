package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/enginetest"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// released is the release the tests push, once, to a registry of their
// own on loopback: its tag's reference.
var released struct {
	ref string
	err error
}

// pushed is the test release in a registry served on loopback until the
// tests end (go-containerregistry's registry package), built from this
// checkout as make release builds it.
func pushed(t *testing.T) string {
	t.Helper()
	if released.ref != "" || released.err != nil {
		if released.err != nil {
			t.Fatal(released.err)
		}
		return released.ref
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	srv.Listener = l
	srv.Start()
	// The registry lives until the test binary exits: every test of the
	// package pulls from it.
	repo := l.Addr().String() + "/limitlab"
	start := time.Now()
	_, err = release(context.Background(), options{version: "v0.0.0-test", registry: repo, platforms: []string{"linux/amd64", "linux/arm64"}, dir: "../.."}, os.Stderr)
	released.ref, released.err = repo+":v0.0.0-test", err
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("make release of two platforms, pushed to %s: %s", repo, time.Since(start).Round(time.Second))
	return released.ref
}

// The release is one OCI image index of two platforms: each entry's
// config names its own architecture, and the binary inside is an ELF of
// that machine (arm64's an aarch64 one), static, with the release's
// healthcheck and defaults.
func TestTheReleaseIsAMultiArchIndex(t *testing.T) {
	ref, err := name.ParseReference(pushed(t), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(ref)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	if len(im.Manifests) != 2 || string(im.MediaType) != "application/vnd.oci.image.index.v1+json" {
		t.Fatalf("the index: %s with %d manifests, want an OCI index of 2", im.MediaType, len(im.Manifests))
	}
	for _, d := range im.Manifests {
		if d.Platform == nil {
			t.Fatalf("manifest %s names no platform", d.Digest)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		arch := d.Platform.Architecture
		if cf.Architecture != arch || cf.OS != "linux" {
			t.Errorf("the %s entry's config says %s/%s", arch, cf.OS, cf.Architecture)
		}
		if hc := cf.Config.Healthcheck; hc == nil || strings.Join(hc.Test, " ") != "CMD /limitlab healthcheck" {
			t.Errorf("the %s image's healthcheck: %+v", arch, hc)
		}
		bin := binaryOf(t, img)
		f, err := elf.NewFile(bytes.NewReader(bin))
		if err != nil {
			t.Fatalf("the %s image's /limitlab: %v", arch, err)
		}
		if f.Machine != machines[arch] {
			t.Errorf("the %s image's /limitlab is an ELF for %s, want %s", arch, f.Machine, machines[arch])
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("the %s binary is dynamically linked", arch)
			}
		}
		t.Logf("%s: %s, /limitlab %.1f MB, %s", arch, d.Digest, float64(len(bin))/1e6, f.Machine)
	}
}

// Beside the dashboard, the release pushes the workload image that a
// cluster's nodes pull (the chart's workloadImage): an index of the same
// platforms, each entry the same binary as the dashboard's, run as nobody
// as `limitlab workload`. Pulled by this machine's engine, it runs a
// lane's load hardened as a lane is, and reports it.
func TestTheReleaseCarriesTheWorkloadImage(t *testing.T) {
	dashRef, err := name.ParseReference(pushed(t), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	wref := strings.Replace(pushed(t), "/limitlab:", "/limitlab-workload:", 1)
	workRef, err := name.ParseReference(wref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	work, err := remote.Index(workRef)
	if err != nil {
		t.Fatalf("the workload image %s: %v", wref, err)
	}
	wm, err := work.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(wm.Manifests) != 2 {
		t.Fatalf("the workload index has %d manifests, want 2", len(wm.Manifests))
	}
	for _, d := range wm.Manifests {
		arch := d.Platform.Architecture
		img, err := work.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Architecture != arch || strings.Join(cf.Config.Entrypoint, " ") != "/limitlab workload" || cf.Config.User != "65534:65534" {
			t.Errorf("the %s workload image's config: %s, entrypoint %v, user %q", arch, cf.Architecture, cf.Config.Entrypoint, cf.Config.User)
		}
		dimg, err := remote.Image(dashRef, remote.WithPlatform(*d.Platform))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(binaryOf(t, img), binaryOf(t, dimg)) {
			t.Errorf("the %s workload image's binary is not the dashboard's", arch)
		}
	}

	run(t, "", nil, "docker", "pull", "-q", wref)
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", wref).Run() })
	out := run(t, "", nil, "docker", "run", "--rm", "--network", "none", "--read-only", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", wref, "spin", "-threads", "1", "-seconds", "1")
	if !strings.Contains(out, `"final":true`) {
		t.Errorf("the workload image's load reported no summary:\n%s", out)
	}
}

// binaryOf is /limitlab of an image.
func binaryOf(t *testing.T, img v1.Image) []byte {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("no /limitlab in the layer: %v", err)
		}
		if h.Name == "limitlab" {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}

// run runs a command, failing the test with its output if it fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// freePort is a port free on loopback now.
func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}

// releasedRun is what the tests read of a run on the released dashboard.
type releasedRun struct {
	State string
	Ended bool
	Error string
	Lanes []struct {
		MeasuredCores float64 `json:"measured_cores"`
	}
	Verdict *struct {
		Judged, Pass, Inconclusive bool
		Explanation, Noise         string
		Predicted, Measured        []float64
	}
}

// runToEnd waits for the dashboard at base to be ready, runs spec there
// and waits for its end.
func runToEnd(t *testing.T, base, spec string) releasedRun {
	t.Helper()
	enginetest.WaitFor(t, 3*time.Minute, "the released dashboard's /readyz", func() bool {
		res, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	res, err := http.Post(base+"/api/runs", "application/json", strings.NewReader(spec))
	if err != nil {
		t.Fatal(err)
	}
	var created struct{ ID string }
	_ = json.NewDecoder(res.Body).Decode(&created)
	res.Body.Close()
	if created.ID == "" {
		t.Fatalf("POST /api/runs: %d", res.StatusCode)
	}
	var v releasedRun
	enginetest.WaitFor(t, 5*time.Minute, "the run to end", func() bool {
		res, err := http.Get(base + "/api/runs/" + created.ID)
		if err != nil {
			return false
		}
		defer res.Body.Close()
		return json.NewDecoder(res.Body).Decode(&v) == nil && v.Ended
	})
	return v
}

// labToVerdict runs cpus-ladder on the dashboard at base to its verdict.
func labToVerdict(t *testing.T, base string) {
	t.Helper()
	v := runToEnd(t, base, `{"lab": "cpus-ladder"}`)
	if v.State != "done" || v.Verdict == nil || !v.Verdict.Judged || len(v.Verdict.Measured) != 4 {
		t.Fatalf("cpus-ladder on the released image: %s, verdict %+v: %s", v.State, v.Verdict, v.Error)
	}
	// Its verdict is the lab's to pass or fail on this shared host; that
	// it comes is what the release must show.
	t.Logf("cpus-ladder on the released image: %s; predicted %v s, measured %v s: pass %v, inconclusive %v %s",
		v.State, v.Verdict.Predicted, v.Verdict.Measured, v.Verdict.Pass, v.Verdict.Inconclusive, v.Verdict.Noise)
}

// shortRun runs a lane of two seconds under --cpus 0.5 on the dashboard
// at base: it ends done, its CPU measured.
func shortRun(t *testing.T, base string) {
	t.Helper()
	v := runToEnd(t, base, `{"name": "released", "lanes": [{"workload": {"kind": "spin", "seconds": 2}, "limits": {"cpus": "0.5"}}]}`)
	if v.State != "done" || len(v.Lanes) != 1 || v.Lanes[0].MeasuredCores <= 0 {
		t.Fatalf("a short run on the released image: %s, lanes %+v: %s", v.State, v.Lanes, v.Error)
	}
	t.Logf("a short run on the released image: %s, %.2f cores", v.State, v.Lanes[0].MeasuredCores)
}

// removeWorkloadImages removes the workload images that the released
// server built on this machine's engine (its binary is the release's, so
// its image is its own), once its container is gone.
func removeWorkloadImages(t *testing.T, logs string) {
	for _, f := range strings.Fields(logs) {
		if img, ok := strings.CutPrefix(f, "image=limitlab-workload:"); ok && len(img) == 16 {
			_ = exec.Command("docker", "rmi", "limitlab-workload:"+img).Run()
		}
	}
}

// The released image, pulled from the registry by this machine's Docker
// Engine, serves the dashboard under `docker run` as the README gives it
// and runs cpus-ladder to its verdict; its HEALTHCHECK says healthy.
func TestTheReleasedImageRunsWithDockerRun(t *testing.T) {
	ref := pushed(t)
	run(t, "", nil, "docker", "pull", "-q", ref)
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", ref).Run() })
	port := freePort(t)
	name := "limitlab-release-test"
	_ = exec.Command("docker", "rm", "-f", name).Run()
	// The store on a volume of its own, as the README's line has it
	// (limitlab-data there), removed with the container.
	volume := name + "-data"
	run(t, "", nil, "docker", "run", "-d", "--name", name, "-p", "127.0.0.1:"+port+":8080",
		"-v", "/var/run/docker.sock:/var/run/docker.sock", "-v", "/sys/fs/cgroup:/host/sys/fs/cgroup:ro", "-v", volume+":/data", ref)
	t.Cleanup(func() {
		logs, _ := exec.Command("docker", "logs", name).CombinedOutput()
		_ = exec.Command("docker", "stop", "-t", "40", name).Run()
		_ = exec.Command("docker", "rm", "-f", "-v", name).Run()
		if out, err := exec.Command("docker", "volume", "rm", volume).CombinedOutput(); err != nil {
			t.Errorf("the store's volume: %v: %s", err, out)
		}
		removeWorkloadImages(t, string(logs))
	})
	labToVerdict(t, "http://127.0.0.1:"+port)
	enginetest.WaitFor(t, 2*time.Minute, "the container's HEALTHCHECK to say healthy", func() bool {
		out, _ := exec.Command("docker", "inspect", "-f", "{{.State.Health.Status}}", name).Output()
		return strings.TrimSpace(string(out)) == "healthy"
	})
}

// The same image under `docker compose up` (Compose v2, Debian 13's,
// unpacked by engines/compose2.sh), with the repository's compose file:
// ready, healthy, and a short run to its end (the docker run test above
// takes a lab to its verdict).
func TestTheReleasedImageRunsWithComposeV2(t *testing.T) {
	ref := pushed(t)
	out, err := exec.Command("../../engines/compose2.sh").Output()
	if err != nil {
		t.Fatalf("engines/compose2.sh: %v", err)
	}
	compose := strings.TrimSpace(string(out))
	root, _ := filepath.Abs("../..")
	port := freePort(t)
	env := []string{"LIMITLAB_IMAGE=" + ref, "LIMITLAB_PORT=" + port}
	project := []string{"-p", "limitlabrelease", "-f", "docker-compose.yml"}
	run(t, root, env, compose, append(project, "up", "-d")...)
	t.Cleanup(func() {
		logsCmd := exec.Command(compose, append(project, "logs")...)
		logsCmd.Dir, logsCmd.Env = root, append(os.Environ(), env...)
		logs, _ := logsCmd.CombinedOutput()
		cmd := exec.Command(compose, append(project, "down", "-v", "--timeout", "40")...)
		cmd.Dir, cmd.Env = root, append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("docker compose down: %v\n%s", err, out)
		}
		removeWorkloadImages(t, string(logs))
		_ = exec.Command("docker", "rmi", ref).Run()
	})
	shortRun(t, "http://127.0.0.1:"+port)
	enginetest.WaitFor(t, 2*time.Minute, "compose to say the service is healthy", func() bool {
		cmd := exec.Command(compose, append(project, "ps", "--format", "{{.Health}}")...)
		cmd.Dir, cmd.Env = root, append(os.Environ(), env...)
		out, _ := cmd.Output()
		return strings.Contains(string(out), "healthy") && !strings.Contains(string(out), "unhealthy")
	})
}
