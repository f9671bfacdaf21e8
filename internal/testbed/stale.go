package testbed

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Where test engines live: each under /run/ll-<name> (socket, exec root,
// pidfile, log) and /var/lib/limitlab-test/<name> (data root, and
// <name>.img beside it for a loop disk).
const (
	runPrefix = "/run/ll-"
	dataDir   = "/var/lib/limitlab-test"
)

// ReapStale stops what an interrupted test left of test engines: every
// dockerd whose pidfile is under /run/ll-*, its containerd shims, its
// mounts, its loop disk and its files. A test engine is started with
// --pidfile there, so that the next run finds it; the machine's own engine
// is never touched. It returns the names of the engines it stopped.
func ReapStale() ([]string, error) {
	dirs, _ := filepath.Glob(runPrefix + "*")
	var names []string
	var errs []error
	for _, dir := range dirs {
		name := strings.TrimPrefix(dir, runPrefix)
		stopped, err := reapStale(name)
		if err != nil {
			errs = append(errs, err)
		}
		if stopped {
			names = append(names, name)
		}
	}
	// The cgroups of test engines gone already (an earlier version of
	// the tests left them).
	left, _ := filepath.Glob("/sys/fs/cgroup/*/" + CgroupParent("*"))
	for _, dir := range left {
		if err := removeCgroups(filepath.Base(dir)); err != nil {
			errs = append(errs, err)
		}
	}
	// Loop disks whose engine is gone already.
	imgs, _ := filepath.Glob(filepath.Join(dataDir, "*.img"))
	for _, img := range imgs {
		detachLoops(img)
		_ = os.Remove(img)
	}
	return names, errors.Join(errs...)
}

// reapStale stops the test engine name if one still runs, and removes its
// files; it says whether one ran.
func reapStale(name string) (bool, error) {
	run, data := runPrefix+name, filepath.Join(dataDir, name)
	pid := stalePid(run)
	if pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGCONT) // a paused engine could not stop
		_ = syscall.Kill(pid, syscall.SIGTERM)
		deadline := time.Now().Add(30 * time.Second)
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	killShims("ll-" + name)
	unmountUnder(run)
	unmountUnder(data)
	detachLoops(data + ".img")
	_ = os.Remove(data + ".img")
	_ = os.RemoveAll(run)
	if err := os.RemoveAll(data); err != nil {
		return pid > 0, fmt.Errorf("test engine %s: %w", name, err)
	}
	return pid > 0, removeCgroups(CgroupParent(name))
}

// stalePid is the pid in a test engine's pidfile if that process is a
// dockerd serving the test engine's socket; 0 otherwise.
func stalePid(run string) int {
	b, err := os.ReadFile(filepath.Join(run, "docker.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return 0
	}
	cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return 0
	}
	args := strings.Split(string(cmd), "\x00")
	if filepath.Base(args[0]) != "dockerd" || !strings.Contains(string(cmd), "unix://"+run+"/docker.sock") {
		return 0 // the pid was reused by another process
	}
	return pid
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// A zombie has exited; its parent (the test that died) is gone.
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}

// detachLoops detaches every loop device backed by img.
func detachLoops(img string) {
	out, err := exec.Command("losetup", "-j", img).Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if dev, _, ok := strings.Cut(line, ":"); ok && dev != "" {
			_ = exec.Command("losetup", "-d", dev).Run()
		}
	}
}
