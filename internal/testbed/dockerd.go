package testbed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/moby/moby/client"
)

// Dockerd is a Docker engine a test starts beside the machine's own, as a
// pool's engine: its own socket, data root, exec root, pidfile, cgroup
// parent and containerd namespace, and so its own containerd, which it
// supervises. Its containers have no network (lanes need none), so it
// makes no bridge and touches no iptables. It runs in a network namespace
// of its own: a dockerd started with --bridge=none deletes any docker0 it
// sees, and the machine's own engine's bridge must stay as it is.
type Dockerd struct {
	Name   string
	Host   string // unix:///run/ll-<name>/docker.sock
	Client *client.Client
	cmd    *exec.Cmd
	exited chan struct{}
	log    *os.File
	run    string // its socket, exec root, pidfile and log
	data   string // its data root
	loop   string // the loop device under its data root, if any
}

// DockerdOptions change how StartEngine starts an engine.
type DockerdOptions struct {
	// DataRootOnTmpfs puts the engine's data root on a tmpfs of its own:
	// no block device under it, so no block IO throttle can name one.
	DataRootOnTmpfs bool
	// DataRootOnLoop puts the engine's data root on an ext4 filesystem of
	// its own on a loop device: another disk than the machine's engine's,
	// so the device "auto" means another device there.
	DataRootOnLoop bool
}

// StartEngine starts an engine named name under /run/ll-<name> and
// /var/lib/limitlab-test/<name>, and returns once it answers. Close stops
// it and removes its files.
func StartEngine(name string, o DockerdOptions) (*Dockerd, error) {
	run := runPrefix + name // a unix socket's path is short
	data := filepath.Join(dataDir, name)
	// An engine of this name that an interrupted test left running.
	if stopped, err := reapStale(name); err != nil {
		return nil, err
	} else if stopped {
		slog.Warn("stopped a test engine left running by an earlier test", slog.String("engine", name))
	}
	for _, d := range []string{run, data} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	if o.DataRootOnTmpfs {
		if err := syscall.Mount("tmpfs", data, "tmpfs", 0, "size=512m"); err != nil {
			return nil, fmt.Errorf("tmpfs for %s: %w", name, err)
		}
	}
	var loop string
	if o.DataRootOnLoop {
		var err error
		if loop, err = mountLoop(data+".img", data); err != nil {
			return nil, fmt.Errorf("loop disk for %s: %w", name, err)
		}
	}
	logf, err := os.Create(filepath.Join(run, "dockerd.log"))
	if err != nil {
		return nil, err
	}
	d := &Dockerd{Name: name, Host: "unix://" + run + "/docker.sock", exited: make(chan struct{}), log: logf, run: run, data: data, loop: loop}
	d.cmd = exec.Command("dockerd",
		"--host", d.Host, "--data-root", data, "--exec-root", run+"/exec", "--pidfile", run+"/docker.pid",
		"--cgroup-parent", CgroupParent(name), "--containerd-namespace", "ll-"+name, "--containerd-plugins-namespace", "ll-"+name+"-plugins",
		"--bridge", "none", "--iptables=false", "--ip-masq=false", "--log-level", "warn")
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Cloneflags: syscall.CLONE_NEWNET}
	if err := d.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start dockerd %s: %w", name, err)
	}
	go func() { _ = d.cmd.Wait(); close(d.exited) }()
	fail := func(err error) (*Dockerd, error) {
		_ = d.Close()
		return nil, err
	}
	if d.Client, err = client.New(client.WithHost(d.Host)); err != nil {
		return fail(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := d.Client.Ping(ctx, client.PingOptions{})
		cancel()
		if err == nil {
			return d, nil
		}
		select {
		case <-d.exited:
			b, _ := os.ReadFile(logf.Name())
			return fail(fmt.Errorf("dockerd %s exited: %s", name, lastLines(string(b), 20)))
		default:
		}
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("dockerd %s does not answer at %s: %v", name, d.Host, err))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Close stops the engine and removes its files: what a killed engine left
// too (its containers' shims and mounts).
func (d *Dockerd) Close() error {
	d.Stop()
	d.log.Close()
	killShims("ll-" + d.Name)
	unmountUnder(d.run)
	unmountUnder(d.data)
	if d.loop != "" {
		if out, err := exec.Command("losetup", "-d", d.loop).CombinedOutput(); err != nil {
			return fmt.Errorf("dockerd %s: losetup -d %s: %v: %s", d.Name, d.loop, err, out)
		}
		_ = os.Remove(d.data + ".img")
	}
	_ = os.RemoveAll(d.run)
	if err := os.RemoveAll(d.data); err != nil {
		return fmt.Errorf("dockerd %s: data root left: %w", d.Name, err)
	}
	return removeCgroups(CgroupParent(d.Name))
}

// CgroupParent is the cgroup a test engine's containers go under, in
// every hierarchy.
func CgroupParent(name string) string { return "limitlab-pool-" + name }

// removeCgroups removes the cgroup parent the test engine made in each
// hierarchy, once it is empty: its children first, each with rmdir, which
// the kernel refuses for a cgroup that still holds a process. Nothing but
// the directories the engine made is touched.
func removeCgroups(parent string) error {
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*/" + parent)
	if d := "/sys/fs/cgroup/" + parent; fileIsDir(d) {
		dirs = append(dirs, d)
	}
	var errs []error
	for _, dir := range dirs {
		var tree []string
		_ = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				tree = append(tree, p)
			}
			return nil
		})
		for i := len(tree) - 1; i >= 0; i-- {
			if err := syscall.Rmdir(tree[i]); err != nil && !os.IsNotExist(err) {
				errs = append(errs, fmt.Errorf("test engine's cgroup %s: %w", tree[i], err))
				break
			}
		}
	}
	return errors.Join(errs...)
}

func fileIsDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// Pause stops the engine's daemon (SIGSTOP) but not its containerd or its
// containers, which go on running: an engine too loaded or too slow to
// answer. Resume lets it go on.
func (d *Dockerd) Pause() { _ = d.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume undoes Pause.
func (d *Dockerd) Resume() { _ = d.cmd.Process.Signal(syscall.SIGCONT) }

// mountLoop makes a sparse 4 GiB ext4 image (the server keeps 2 GiB free
// under a data root) at img, attaches it to a free
// loop device and mounts it at dir; it returns the device.
func mountLoop(img, dir string) (string, error) {
	_ = os.Remove(img)
	f, err := os.Create(img)
	if err != nil {
		return "", err
	}
	err = f.Truncate(4 << 30)
	f.Close()
	if err != nil {
		return "", err
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", img).CombinedOutput(); err != nil {
		return "", fmt.Errorf("mkfs.ext4: %v: %s", err, out)
	}
	out, err := exec.Command("losetup", "--find", "--show", img).Output()
	if err != nil {
		return "", fmt.Errorf("losetup: %w", err)
	}
	dev := strings.TrimSpace(string(out))
	if err := syscall.Mount(dev, dir, "ext4", 0, ""); err != nil {
		_ = exec.Command("losetup", "-d", dev).Run()
		return "", fmt.Errorf("mount %s: %w", dev, err)
	}
	return dev, nil
}

// Stop asks the engine to stop (it stops its containers and containerd)
// and waits, killing it after 30 s.
func (d *Dockerd) Stop() {
	select {
	case <-d.exited:
		return
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGCONT) // a paused engine could not stop
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.exited
	}
}

// Kill kills the engine and what it supervises (its containerd), as a
// host going away would; its containers' shims live on until the
// containers exit.
func (d *Dockerd) Kill() {
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	<-d.exited
}

// killShims kills the containerd shims of a containerd namespace: an
// engine killed with its containerd leaves them waiting for it.
func killShims(namespace string) {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) < 3 || !strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") {
			continue
		}
		for i := range args[:len(args)-1] {
			if args[i] == "-namespace" && args[i+1] == namespace {
				if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	}
}

// unmountUnder detaches dir and every mount below it, deepest first.
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			points = append(points, f[4])
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		_ = syscall.Unmount(points[i], syscall.MNT_DETACH)
	}
}

// Prepare is what a server does to a pool's engine before it takes runs,
// with the test's binary: probe the host, build the workload image there,
// probe its block IO control.
func Prepare(ctx context.Context, c *client.Client, bin string) (engine.HostInfo, string, error) {
	img, err := engine.EnsureImage(ctx, c, bin, slog.Default())
	if err != nil {
		return engine.HostInfo{}, "", fmt.Errorf("image: %w", err)
	}
	h, err := engine.ProbeHost(ctx, c, engine.HostProbe{CgroupRoot: "/sys/fs/cgroup", Image: img, Log: slog.Default()})
	return h, img, err
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
