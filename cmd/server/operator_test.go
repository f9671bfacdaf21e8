package main

import (
	"bytes"
	"flag"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/enginetest"
)

// Every flag comes from the environment as LIMITLAB_<FLAG>, a flag on the
// command line winning, and -h says so for each.
func TestEveryFlagFromTheEnvironment(t *testing.T) {
	t.Setenv("LIMITLAB_MAX_CONNS", "77")
	t.Setenv("LIMITLAB_SAMPLE", "500ms")
	t.Setenv("LIMITLAB_LOG_FORMAT", "json")
	c, err := parseFlags([]string{"-sample", "100ms"})
	if err != nil || c.maxConns != 77 || c.interval != 100*time.Millisecond || c.logFormat != "json" {
		t.Errorf("-max-conns %d, -sample %s, -log-format %q, %v; want 77 and json from the environment, 100ms from the command line", c.maxConns, c.interval, c.logFormat, err)
	}
	t.Setenv("LIMITLAB_MAX_CONNS", "many")
	if _, err := parseFlags(nil); err == nil || !strings.Contains(err.Error(), "LIMITLAB_MAX_CONNS") {
		t.Errorf("a bad value in the environment: %v, want an error naming the variable", err)
	}
	var help bytes.Buffer
	fs := flag.NewFlagSet("limitlab", flag.ContinueOnError)
	var cc config
	cc.define(fs)
	fs.SetOutput(&help)
	usage(fs)
	for _, want := range []string{"LIMITLAB_<FLAG>", "-max-conns int  ($LIMITLAB_MAX_CONNS)", "($LIMITLAB_KUBE_TOLERATE)", "($LIMITLAB_LOG_FORMAT)"} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("-h does not say %q", want)
		}
	}
}

// The real binary: LIMITLAB_ADDR alone says where it listens; `limitlab
// healthcheck` finds it there and says so by its exit code, as a
// container's HEALTHCHECK reads it; /readyz answers once the engine is
// up; `limitlab version` names the build; -h exits 0.
func TestTheBinaryForOperators(t *testing.T) {
	bin, err := enginetest.BuildBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	env := append(os.Environ(), "LIMITLAB_ADDR="+addr, "LIMITLAB_DATA="+t.TempDir(), "LIMITLAB_LOG_FORMAT=json")
	check := func(args ...string) error {
		cmd := exec.Command(bin, append([]string{"healthcheck"}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Logf("healthcheck %v: %s", args, out)
		}
		return err
	}
	if err := check(); err == nil {
		t.Error("healthcheck with no server there exited 0")
	}
	cmd := exec.Command(bin)
	cmd.Env = env
	var log syncBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = terminate(t, cmd, exited) })
	enginetest.WaitFor(t, 2*time.Minute, "the server to be ready at $LIMITLAB_ADDR", func() bool {
		res, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	if err := check(); err != nil {
		t.Errorf("healthcheck of a serving server: %v", err)
	}
	if err := check("-ready"); err != nil {
		t.Errorf("healthcheck -ready of a ready server: %v", err)
	}
	if !strings.Contains(log.String(), `"msg":"listening"`) {
		t.Errorf("LIMITLAB_LOG_FORMAT=json, but the log is not JSON: %.300s", log.String())
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "limitlab ") || len(strings.TrimSpace(string(out))) < len("limitlab x") {
		t.Errorf("limitlab version: %q %v", out, err)
	}
	if out, err := exec.Command(bin, "-h").CombinedOutput(); err != nil || !strings.Contains(string(out), "LIMITLAB_<FLAG>") {
		t.Errorf("limitlab -h: %v: %.200s", err, out)
	}
}

// A $KUBECONFIG in the shell never sends lanes to a cluster by itself:
// Kubernetes is chosen with -kubernetes (or -kubeconfig), and then found
// as kubectl finds it; -namespace defaults to the deploy files' own.
func TestKubernetesIsChosenNotInherited(t *testing.T) {
	t.Setenv("KUBECONFIG", "/somewhere/kubeconfig")
	c, err := parseFlags(nil)
	if err != nil || c.kubernetes {
		t.Errorf("with $KUBECONFIG set: kubernetes %v, %v; want a Docker engine", c.kubernetes, err)
	}
	if c.namespace != "limitlab" {
		t.Errorf("-namespace defaults to %q, want limitlab", c.namespace)
	}
	if c, err := parseFlags([]string{"-kubernetes", "-context", "lab"}); err != nil || !c.kubernetes || c.kubeContext != "lab" {
		t.Errorf("-kubernetes -context lab: %+v, %v", c.kubernetes, err)
	}
	if c, err := parseFlags([]string{"-kubeconfig", "k.yaml"}); err != nil || !c.kubernetes {
		t.Errorf("-kubeconfig alone: kubernetes %v, %v; want it chosen", c.kubernetes, err)
	}
	if _, err := parseFlags([]string{"-context", "lab"}); err == nil || !strings.Contains(err.Error(), "-kubernetes") {
		t.Errorf("-context without -kubernetes: %v", err)
	}
}
