package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/limitlab/limitlab/internal/sampler"
)

// samplerMain runs `limitlab sampler`: the cgroup files of the engine's
// host, served to a dashboard on another (docs/deploying.md: More than one host).
func samplerMain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("limitlab sampler", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:7071", "address to serve the dashboard on")
	tokenFile := fs.String("token-file", "", "file holding the token the dashboard must send, at least 16 characters (default $LIMITLAB_SAMPLER_TOKEN)")
	root := fs.String("cgroup-root", "/sys/fs/cgroup", "where this host's cgroup filesystem is visible")
	cert := fs.String("tls-cert", "", "certificate file, to serve https (with -tls-key)")
	key := fs.String("tls-key", "", "the certificate's key file")
	verbose := fs.Bool("v", false, "debug logging")
	if err := fs.Parse(args); err != nil {
		return err
	}
	token := os.Getenv("LIMITLAB_SAMPLER_TOKEN")
	if *tokenFile != "" {
		var err error
		if token, err = sampler.ReadToken(*tokenFile); err != nil {
			return fmt.Errorf("-token-file: %w", err)
		}
	}
	if len(token) < sampler.MinToken {
		return fmt.Errorf("the sampler needs a token of at least %d characters: -token-file FILE or $LIMITLAB_SAMPLER_TOKEN (e.g. openssl rand -hex 16 > FILE)", sampler.MinToken)
	}
	if (*cert == "") != (*key == "") {
		return errors.New("-tls-cert and -tls-key go together")
	}
	if _, err := os.Stat(*root); err != nil {
		return fmt.Errorf("-cgroup-root: %w", err)
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	s := &sampler.Server{Token: token, Root: *root, Log: log}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	scheme := "http"
	if *cert != "" {
		scheme = "https"
	} else if h, _, err := net.SplitHostPort(*listen); err == nil && !isLoopback(h) {
		log.Warn("serving beyond this machine without TLS: the token crosses the network in clear; give -tls-cert and -tls-key unless the network is the engine's own")
	}
	errc := make(chan error, 1)
	// Lives until Shutdown.
	go func() {
		log.Info("sampler listening", slog.String("url", scheme+"://"+ln.Addr().String()), slog.String("cgroup_root", *root))
		if *cert != "" {
			errc <- srv.ServeTLS(ln, *cert, *key)
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Hijacked websocket streams end with the process.
	return srv.Shutdown(sctx)
}
