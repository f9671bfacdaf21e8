// Command pooldemo runs the dashboard on a pool of three Docker engines
// started on this machine beside its own (make pool-demo): each dockerd
// has its own socket, data root, exec root, pidfile, cgroup parent and
// containerd namespace. Interrupt it to stop the dashboard and the three
// engines and remove their files. Run it as root, with the machine's
// dockerd binary on PATH.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/testbed"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "pool-demo:", err)
		os.Exit(1)
	}
}

func run() error {
	bin := flag.String("bin", "bin/limitlab", "the server binary (make build)")
	addr := flag.String("addr", "127.0.0.1:8080", "the dashboard's address")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := os.MkdirTemp("", "limitlab-pool-demo")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	var pool []engine.EngineAddress
	for _, name := range []string{"demo-a", "demo-b", "demo-c"} {
		fmt.Fprintf(os.Stderr, "pool-demo: starting dockerd %s\n", name)
		d, err := testbed.StartEngine(name, testbed.DockerdOptions{})
		if err != nil {
			return err
		}
		defer func() {
			fmt.Fprintf(os.Stderr, "pool-demo: stopping dockerd %s\n", d.Name)
			if err := d.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "pool-demo:", err)
			}
		}()
		pool = append(pool, engine.EngineAddress{Name: d.Name, Host: d.Host})
	}
	b, err := json.MarshalIndent(map[string]any{"engines": pool}, "", "  ")
	if err != nil {
		return err
	}
	file := filepath.Join(dir, "engines.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "pool-demo: %s\n%s\npool-demo: the dashboard is at http://%s (its engines at /engines); interrupt to stop\n", file, b, *addr)
	srv := exec.Command(*bin, "-addr", *addr, "-data", filepath.Join(dir, "data"), "-engines", file)
	srv.Stdout, srv.Stderr = os.Stdout, os.Stderr
	if err := srv.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		_ = srv.Process.Signal(syscall.SIGTERM)
		if err := <-done; err != nil && !errors.As(err, new(*exec.ExitError)) {
			return err
		}
		return nil
	}
}
