package engine

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The engine's own processes on this host: what they use while a run
// runs is the engine's work for it, not foreign load. They are found
// without a search of /proc where the engine says who it is: the peer of
// its socket is dockerd, and dockerd's children its containerd; each
// lane's shim is its first process's parent (ProcParent).

// EnginePids are the pids of the local engine's daemons: dockerd, by the
// credentials of the process that answers its socket, and the processes
// it started (its containerd). Where the engine is not a local Docker
// socket (a Kubernetes node's runtime), they are found by their names in
// /proc, once.
func (h HostInfo) EnginePids() []int {
	if h.socket != "" {
		if pid := socketPeer(h.socket); pid > 0 {
			return append([]int{pid}, childrenOf(procRoot, pid)...)
		}
	}
	return searchEnginePids(procRoot)
}

// procRoot is this machine's /proc.
const procRoot = "/proc"

// socketPeer is the pid of the process listening on the unix socket at
// path, from the credentials the kernel gives the connection
// (SO_PEERCRED); 0 if it cannot be had.
func socketPeer(path string) int {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return 0
	}
	defer c.Close()
	raw, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		return 0
	}
	var pid int
	_ = raw.Control(func(fd uintptr) {
		if cred, err := syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}

// childrenOf lists the processes that pid's threads started and that
// still run (/proc/<pid>/task/<tid>/children).
func childrenOf(root string, pid int) []int {
	dir := filepath.Join(root, strconv.Itoa(pid), "task")
	tasks, _ := os.ReadDir(dir)
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "children"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// ProcParent is the parent of the process pid (the fourth field of its
// /proc/<pid>/stat), 0 if it is gone: a container's first process's
// parent is the engine's shim for it.
func ProcParent(root string, pid int) int {
	b, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	ppid, _, _ := statFieldPair(b, 1) // ppid, then pgrp
	return int(ppid)
}

// enginePrograms are the engine's processes by name, for an engine that
// is not a local Docker socket.
var enginePrograms = []string{"dockerd", "containerd", "containerd-shim", "containerd-shim-runc-v2", "runc", "docker-proxy"}

// searchEnginePids are the pids of the engine's processes on this host,
// found by their names in /proc/<pid>/comm.
func searchEnginePids(root string) []int {
	dirs, _ := os.ReadDir(root)
	var out []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, d.Name(), "comm"))
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(b))
		for _, p := range enginePrograms {
			// comm is cut at 15 characters: "containerd-shim" stands for
			// every shim.
			if name == p || (len(p) > 15 && name == p[:15]) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}
