// Package labfiles loads a facilitator's labs from a directory of lab
// files, the same JSON as the built-in labs, and loads them again whenever
// the directory changes. Each file is checked whole: a file with any
// problem is listed as broken with its first problem and never half-loaded.
package labfiles

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/limitlab/limitlab/internal/experiments"
)

// MaxFiles bounds the lab files a directory may hold.
const MaxFiles = 200

// Load reads every *.json file of dir into a catalogue: the built-in labs,
// then dir's. It fails only when dir cannot be listed.
func Load(dir string) (*experiments.Catalog, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("labs: %w", err)
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var labs []experiments.Lab
	var broken []experiments.BrokenLab
	for i, path := range names {
		name := filepath.Base(path)
		if i >= MaxFiles {
			broken = append(broken, experiments.BrokenLab{File: name, Message: fmt.Sprintf("not read: a directory holds at most %d lab files", MaxFiles)})
			continue
		}
		b, err := readFile(path)
		if err != nil {
			broken = append(broken, experiments.BrokenLab{File: name, Message: err.Error()})
			continue
		}
		l, bad := experiments.ParseLabFile(name, b)
		if bad != nil {
			broken = append(broken, *bad)
			continue
		}
		labs = append(labs, l)
	}
	return experiments.NewCatalog(labs, broken), nil
}

// readFile reads a regular file of at most experiments.MaxLabFile bytes,
// and no more than that of a larger one.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, experiments.MaxLabFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > experiments.MaxLabFile {
		return nil, fmt.Errorf("more than %d bytes: a lab is a few kilobytes", experiments.MaxLabFile)
	}
	return b, nil
}

// settle is how long the directory must be quiet before it is read
// again: an editor saves a file in several writes and renames.
const settle = 200 * time.Millisecond

// Watch loads dir, installs its catalogue, and loads and installs it again
// after each change to the directory until ctx ends. The first load's
// error is returned; later ones are logged and leave the last catalogue in
// use. It returns once the first catalogue is installed; its goroutine
// lives until ctx ends, and done is closed after it.
func Watch(ctx context.Context, dir string, log *slog.Logger) (done <-chan struct{}, err error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("labs: watch %s: %w", dir, err)
	}
	if err := w.Add(dir); err != nil {
		w.Close()
		return nil, fmt.Errorf("labs: watch %s: %w", dir, err)
	}
	if err := install(dir, log); err != nil {
		w.Close()
		return nil, err
	}
	finished := make(chan struct{})
	// Lives until ctx ends.
	go func() {
		defer close(finished)
		defer w.Close()
		timer := time.NewTimer(settle)
		timer.Stop()
		for {
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if strings.HasSuffix(ev.Name, ".json") || ev.Has(fsnotify.Remove|fsnotify.Rename) {
					timer.Reset(settle)
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				log.Warn("labs: watching", slog.String("dir", dir), slog.Any("err", err))
				timer.Reset(settle)
			case <-timer.C:
				if err := install(dir, log); err != nil {
					log.Warn("labs: reload", slog.String("dir", dir), slog.Any("err", err))
				}
			}
		}
	}()
	return finished, nil
}

func install(dir string, log *slog.Logger) error {
	c, err := Load(dir)
	if err != nil {
		return err
	}
	experiments.Install(c)
	extra := len(c.Labs()) - len(experiments.Builtin())
	log.Info("labs loaded", slog.String("dir", dir), slog.Int("labs", extra), slog.Int("broken", len(c.Broken())))
	for _, b := range c.Broken() {
		log.Warn("lab file not loaded", slog.String("error", b.Error()))
	}
	return nil
}
