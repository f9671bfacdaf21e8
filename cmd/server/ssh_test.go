package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/workshop"
)

// sshd starts an OpenSSH server of the test's own on loopback that lets
// root in with a key made for the test, and returns its port, the key and
// a known_hosts file holding its host key.
func sshd(t *testing.T) (port, key, knownHosts string) {
	t.Helper()
	bin := "/usr/sbin/sshd"
	if _, err := os.Stat(bin); err != nil {
		t.Fatal("OpenSSH's server is needed for this test: apt-get install -y openssh-server")
	}
	dir := t.TempDir()
	for _, k := range []string{"host", "user"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, k)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
	}
	pub := func(k string) string {
		b, err := os.ReadFile(filepath.Join(dir, k+".pub"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	port = strings.Split(freeAddr(t), ":")[1]
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("authorized_keys", pub("user"))
	knownHosts = write("known_hosts", "[127.0.0.1]:"+port+" "+pub("host"))
	config := write("sshd_config", strings.Join([]string{
		"Port " + port, "ListenAddress 127.0.0.1", "HostKey " + filepath.Join(dir, "host"),
		"PidFile " + filepath.Join(dir, "sshd.pid"), "AuthorizedKeysFile " + filepath.Join(dir, "authorized_keys"),
		"PermitRootLogin prohibit-password", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
		"UsePAM no", "StrictModes no",
	}, "\n")+"\n")
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // its privilege separation directory
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-D", "-e", "-f", config)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	key = filepath.Join(dir, "user")
	enginetest.WaitFor(t, 10*time.Second, "sshd to let the test's key in", func() bool {
		return exec.Command("ssh", "-p", port, "-i", key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
			"-o", "UserKnownHostsFile="+knownHosts, "-o", "StrictHostKeyChecking=yes", "root@127.0.0.1", "true").Run() == nil
	})
	return port, key, knownHosts
}

// TestServerWithAnSSHEngine reaches the machine's engine as ssh:// in a
// pool, through an sshd of the test's own: it is probed and made ready, a
// run runs on it, sampled from the engine's stats as a remote engine is,
// and an engine whose host key is not the known one stays out of the
// pool, saying why.
func TestServerWithAnSSHEngine(t *testing.T) {
	enginetest.Engine(t)
	port, key, knownHosts := sshd(t)
	bin, err := enginetest.BuildBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	stranger := filepath.Join(dir, "known_hosts_of_another")
	if err := os.WriteFile(stranger, []byte("[127.0.0.1]:"+port+" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKx6bxP9pGvN8DmQcxmbGJgZ7rU1n3SxxyYl/S2mAnlT\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "engines.json")
	body := `{"engines": [{"name": "over-ssh", "host": "ssh://root@127.0.0.1:` + port + `", "ssh": {"identity_file": "` + key + `", "known_hosts_file": "` + knownHosts + `"}},
	  {"name": "impostor", "host": "ssh://root@127.0.0.1:` + port + `", "ssh": {"identity_file": "` + key + `", "known_hosts_file": "` + stranger + `"}}]}`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, base := startServer(t, bin, t.TempDir(), "-engines", file)
	var engines struct{ Engines []workshop.EngineView }
	getJSON(t, base+"/api/engines", &engines)
	if len(engines.Engines) != 2 || !engines.Engines[0].Up || engines.Engines[0].Host.StatsSource != "engine" {
		t.Fatalf("the ssh engine: %+v", engines.Engines)
	}
	if e := engines.Engines[1]; e.Up || !strings.Contains(e.Error, "Host key verification failed") {
		t.Errorf("an engine whose host key is not the known one: up %v, %q", e.Up, e.Error)
	}
	id := submit(t, base, `{"name": "over ssh", "duration": "30s", "lanes": [{"workload": {"kind": "spin", "seconds": 3}, "limits": {"cpus": "0.5"}}]}`)
	var v struct {
		State, Engine string
		StatsNote     string `json:"stats_note"`
		Lanes         []struct {
			StatsSource string `json:"stats_source"`
		}
	}
	waitEnded(t, base, id, 2*time.Minute, &v)
	if v.State != "done" || v.Engine != "over-ssh" || v.Lanes[0].StatsSource != "engine" || !strings.Contains(v.StatsNote, "ssh://root@127.0.0.1:"+port) {
		t.Errorf("the run over ssh: %+v", v)
	}
}
