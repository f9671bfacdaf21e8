package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// healthcheckMain asks a running dashboard whether it serves (GET
// /healthz), for a HEALTHCHECK of the FROM scratch image, which has no
// shell and no curl: limitlab healthcheck [-addr HOST:PORT] [-tls]
// [-ready]. It exits 0 if the answer is 200.
func healthcheckMain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("limitlab healthcheck", flag.ContinueOnError)
	addr := fs.String("addr", envOr("LIMITLAB_ADDR", "127.0.0.1:8080"), "the dashboard's `address` (default $LIMITLAB_ADDR)")
	overTLS := fs.Bool("tls", os.Getenv("LIMITLAB_TLS_CERT") != "", "ask over https, not verifying the certificate (default: whether $LIMITLAB_TLS_CERT is set)")
	readyToo := fs.Bool("ready", false, "ask /readyz (the store writes and an engine is up) rather than /healthz")
	if err := fs.Parse(args); err != nil {
		return err
	}
	scheme, path := "http", "/healthz"
	if *overTLS {
		scheme = "https"
	}
	if *readyToo {
		path = "/readyz"
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", scheme+"://"+*addr+path, nil)
	if err != nil {
		return err
	}
	// The server's own certificate, on its own address: there is nothing
	// to verify it against from inside its container.
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	res, err := cl.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1024))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s%s: %d %s", *addr, path, res.StatusCode, body)
	}
	return nil
}

// envOr is the environment variable's value, or def if it is unset.
func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}
