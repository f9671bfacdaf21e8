package enginetest

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
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

// StartNginx runs nginx with TLS on 127.0.0.1:port in front of upstream
// (host:port), with a self-signed certificate written into dir. It sets
// the forwarding headers a proxy in front of Limit Lab must set. No nginx
// on the machine is an error that says how to install it.
func StartNginx(dir string, port int, upstream string) (*Proxy, error) {
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
    location / {
      proxy_pass http://%[5]s;
      proxy_http_version 1.1;
      proxy_read_timeout 1h;
      proxy_set_header Host $host:$server_port;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
    }
  }
}
`, dir, port, cert, key, upstream)
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
