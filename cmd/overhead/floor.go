package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
)

// The floor is what a sample cannot cost less than on this host: a
// program that, at the sampler's rate, reads the files the server reads at
// every tick (engine.CgroupReader.TickFiles and the progress file), the
// same way (one raw pread each, descriptors kept open), and does nothing
// else: no parsing, no store, no publishing, none of the host's noise
// figures. It runs as `overhead floor` beside the containers alone, and
// reports its CPU from getrusage, which is exact where /proc's ticks are
// 10 ms.

// floorResult is what `overhead floor` prints.
type floorResult struct {
	CPUUs   int64 `json:"cpu_us"`
	Files   int   `json:"files"`   // read at each tick, all lanes together
	Samples int   `json:"samples"` // container-samples: lanes × ticks
}

// floorMain is `overhead floor -every D -for D id:pid ...`.
func floorMain(args []string) error {
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	every := fs.Duration("every", 250*time.Millisecond, "the sampler's interval")
	window := fs.Duration("for", 20*time.Second, "how long to read")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var fds []int
	var paths []string
	for _, arg := range fs.Args() {
		id, p, ok := strings.Cut(arg, ":")
		pid, err := strconv.Atoi(p)
		if !ok || err != nil || pid <= 0 {
			return fmt.Errorf("floor: %q is not id:pid", arg)
		}
		cg, err := engine.FindCgroup("/sys/fs/cgroup", id, pid)
		if err != nil {
			return err
		}
		names := append(cg.TickFiles(), engine.ProgressPathOf(pid))
		for _, name := range names {
			f, err := os.Open(name)
			if err != nil {
				return fmt.Errorf("floor: %w", err)
			}
			defer f.Close()
			fds, paths = append(fds, int(f.Fd())), append(paths, name)
		}
	}
	buf := make([]byte, 4096)
	var before, after syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &before); err != nil {
		return err
	}
	t := time.NewTicker(*every)
	defer t.Stop()
	ticks := 0
	for end := time.Now().Add(*window); ; ticks++ {
		if now := <-t.C; now.After(end) {
			break
		}
		for k, fd := range fds {
			if _, err := engine.ReadAt0(fd, paths[k], &buf); err != nil {
				return fmt.Errorf("floor: %w", err)
			}
		}
	}
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &after); err != nil {
		return err
	}
	cpu := after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano()
	return json.NewEncoder(os.Stdout).Encode(floorResult{CPUUs: cpu / 1e3, Files: len(fds), Samples: ticks * fs.NArg()})
}

// floorWindow runs `overhead floor` over the containers ids (with their
// pids) for one window at interval.
func floorWindow(ctx context.Context, ids []string, pids []int, window, interval time.Duration) (floorResult, error) {
	self, err := os.Executable()
	if err != nil {
		return floorResult{}, err
	}
	args := []string{"floor", "-every", interval.String(), "-for", window.String()}
	for k, id := range ids {
		args = append(args, id+":"+strconv.Itoa(pids[k]))
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return floorResult{}, fmt.Errorf("overhead floor: %w", err)
	}
	var r floorResult
	if err := json.Unmarshal(out, &r); err != nil || r.Samples == 0 {
		return r, errors.Join(errors.New("overhead floor: no result"), err)
	}
	return r, nil
}

// perSample is the floor's CPU per container-sample, in µs.
func (r floorResult) perSample() float64 { return float64(r.CPUUs) / float64(r.Samples) }
