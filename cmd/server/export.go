package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/limitlab/limitlab"
	"github.com/limitlab/limitlab/internal/store"
	"github.com/limitlab/limitlab/internal/workshop"
	"github.com/limitlab/limitlab/web"
)

// exportMain writes a stored run as one HTML page that replays it with no
// server (docs/tutorials.md): limitlab export -html RUN_ID. It reads the
// data directory, which a running server may hold open beside it.
func exportMain(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("limitlab export", flag.ContinueOnError)
	html := fs.Bool("html", false, "write the run as one self-contained HTML page")
	dir := fs.String("data", "data", "the server's data `DIRECTORY`")
	out := fs.String("o", "", "write to `FILE` (limitlab-RUN_ID.html if empty; - for standard output)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !*html || fs.NArg() != 1 {
		return errors.New("usage: limitlab export -html [-data DIR] [-o FILE] RUN_ID")
	}
	id := fs.Arg(0)
	if _, err := os.Stat(filepath.Join(*dir, store.FileName)); err != nil {
		return fmt.Errorf("no run store in %s: %w", *dir, err)
	}
	st, err := store.Open(*dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer st.Close()
	e, err := workshop.StoredExport(st, id)
	if err != nil {
		return err
	}
	page, err := web.NewPublisher(limitlab.Static()).Page(e, false)
	if err != nil {
		return err
	}
	if *out == "-" {
		_, err = os.Stdout.Write(page)
		return err
	}
	if *out == "" {
		*out = "limitlab-" + id + ".html"
	}
	// Written whole or not at all: a failed export leaves no half a page.
	tmp, err := os.CreateTemp(filepath.Dir(*out), ".limitlab-export-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(page); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), *out); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s (%.0f KB)\n", *out, float64(len(page))/1e3)
	return nil
}
