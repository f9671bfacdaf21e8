// Package sampler reads containers' cgroup files on an engine's host for a
// dashboard that cannot see them: `limitlab sampler` runs beside a remote
// engine and serves each container's counters over a websocket, and the
// dashboard's Client opens one such stream per lane. Its readings carry
// what the cgroup files carry (PSI on cgroup v2, IO operations), at the
// run's interval, where the engine's own stats come once a second.
//
// The protocol is JSON text messages on GET /v1/cgroup?id=ID&pid=PID, with
// the token as Authorization: Bearer. The dashboard asks, the sampler
// answers in order:
//
//	{"op":"read"}                                             → {"seq":0,"counters":{"at":…,"cpu_ns":…,…}}
//	{"op":"file","seq":2,"controller":"cpu","name":"cpu.max"} → {"seq":2,"data":"50000 100000\n"}
//	{"op":"refresh"}                                          (no answer: the next read takes every file)
//
// A read carries no seq, and its answer seq 0: reads are answered in the
// order asked, one at a time. A file request's seq (from 1) pairs it with
// its answer. An answer that failed carries "error" instead. The counters'
// names are wireCounters' (wire.go). GET /v1/ping answers 204
// to the token, so that a dashboard can check its configuration at start.
package sampler

import (
	"regexp"
	"strconv"
)

// The operations a dashboard may ask for.
const (
	opRead    = "read"
	opFile    = "file"
	opRefresh = "refresh"
)

// request is one message from the dashboard.
type request struct {
	Op         string `json:"op"`
	Seq        uint64 `json:"seq,omitempty"`
	Controller string `json:"controller,omitempty"`
	Name       string `json:"name,omitempty"`
}

// reply is the sampler's answer to a read or a file request.
type reply struct {
	Seq      uint64        `json:"seq"`
	Counters *wireCounters `json:"counters,omitempty"`
	Data     string        `json:"data,omitempty"`
	Error    string        `json:"error,omitempty"`
	// Missing says the file asked for does not exist: the kernel does
	// not offer it, which is an answer, not a failure.
	Missing bool `json:"missing,omitempty"`
}

// Limits of the protocol: a request is a few dozen bytes, a cgroup file
// read back a few hundred.
const (
	maxRequest = 512
	maxFile    = 4 << 10
	maxReply   = 16 << 10
	// MinToken is the shortest token either side accepts.
	MinToken = 16
)

var (
	// A cgroup file's name: no path, no dots but the kernel's own.
	fileName = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$`)
)

// controllers are the v1 hierarchies a file may be asked of (on v2 every
// file is in the container's one directory).
var controllers = map[string]bool{"cpu": true, "cpuacct": true, "cpuset": true, "memory": true, "blkio": true, "pids": true}

// maxPid is the kernel's largest pid_max.
const maxPid = 1 << 22

// parsePid reads a pid from the query, or says it is none.
func parsePid(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n > 0 && n <= maxPid
}
