package testbed

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Proxy is Debian's nginx run as a workshop's TLS reverse proxy on
// loopback, websockets included: the tests and the soak put it in front of
// the dashboard.
type Proxy struct {
	cmd  *exec.Cmd
	done chan error
	Addr string         // where it listens, 127.0.0.1:port
	Dir  string         // its configuration, certificate and logs
	Pool *x509.CertPool // trusts its certificate
}

// WorkshopDoc is the document, from the repository's root, whose nginx
// block the tests and the soak run: what it tells a facilitator is what
// is tested.
const WorkshopDoc = "docs/workshops.md"

// DocNginxLocation is the nginx location block of WorkshopDoc (its one
// ```nginx block), proxying to upstream (host:port) in place of the
// dashboard's address it names.
func DocNginxLocation(upstream string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: run from the repository")
		}
		dir = parent
	}
	b, err := os.ReadFile(filepath.Join(dir, WorkshopDoc))
	if err != nil {
		return "", err
	}
	_, rest, ok := strings.Cut(string(b), "```nginx\n")
	block, _, closed := strings.Cut(rest, "```")
	if !ok || !closed {
		return "", fmt.Errorf("%s has no ```nginx block", WorkshopDoc)
	}
	const dashboard = "http://127.0.0.1:8080"
	if !strings.Contains(block, dashboard) {
		return "", fmt.Errorf("%s's nginx block does not proxy to %s", WorkshopDoc, dashboard)
	}
	return strings.ReplaceAll(block, dashboard, "http://"+upstream), nil
}

// StartNginx runs nginx with TLS on 127.0.0.1:port in front of upstream
// (host:port), with a self-signed certificate written into dir, and the
// location block of the workshop document (DocNginxLocation): the
// forwarding headers a proxy in front of Limit Lab must set. No nginx on
// the machine is an error that says how to install it.
func StartNginx(dir string, port int, upstream string) (*Proxy, error) {
	location, err := DocNginxLocation(upstream)
	if err != nil {
		return nil, err
	}
	bin, err := exec.LookPath("nginx")
	if err != nil {
		bin = "/usr/sbin/nginx"
		if _, err := os.Stat(bin); err != nil {
			return nil, errors.New("no nginx on this machine: apt-get install nginx-light (.ci/run does)")
		}
	}
	cert, key, pool, err := WriteSelfSigned(dir)
	if err != nil {
		return nil, err
	}
	conf := fmt.Sprintf(`pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
daemon off;
worker_processes 1;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  map $http_upgrade $connection_upgrade { default upgrade; '' close; }
  server {
    listen 127.0.0.1:%[2]d ssl;
    ssl_certificate %[3]s;
    ssl_certificate_key %[4]s;
%[5]s
  }
}
`, dir, port, cert, key, location)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	out, err := os.Create(filepath.Join(dir, "out.log"))
	if err != nil {
		return nil, err
	}
	defer out.Close()
	p := &Proxy{cmd: exec.Command(bin, "-p", dir, "-c", path), done: make(chan error, 1), Dir: dir, Pool: pool, Addr: fmt.Sprintf("127.0.0.1:%d", port)}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	// Waits for nginx's exit, which Stop asks for.
	go func() { p.done <- p.cmd.Wait() }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			return p, nil
		}
		select {
		case err := <-p.done:
			b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			return nil, fmt.Errorf("nginx exited: %v: %s", err, b)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = p.Stop()
			return nil, errors.New("nginx did not listen within 10s")
		}
	}
}

// Stop asks nginx to finish (SIGQUIT), and kills it after ten seconds.
func (p *Proxy) Stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case err := <-p.done:
		return err
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		return <-p.done
	}
}
