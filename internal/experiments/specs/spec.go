// Package specs knows what a Limit Lab experiment is: a spec of lanes, each
// a workload plus Docker limits or a pod's resources, how to parse and
// validate it against a host into a plan, a live change of a lane's
// limits, and what the equivalent docker CLI command is. It is the bottom
// of the domain: it knows no lab, no model and nothing of HTTP or of an
// engine.
package specs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"time"

	units "github.com/docker/go-units"
)

// Mode says whether lanes run together (contention) or one after another
// (isolated timings).
type Mode string

const (
	Parallel   Mode = "parallel"
	Sequential Mode = "sequential"
)

// Limits of the run's duration: every container is stopped when it is up.
const (
	DefaultDuration = 60 * time.Second
	MaxDuration     = 10 * time.Minute
	MinDuration     = time.Second
	MaxLanes        = 12
)

// Spec is an experiment as a user (or a lab) writes it. Limits keep the
// docker CLI's names and syntax so that a spec reads like the commands in the
// seeds' write-ups.
type Spec struct {
	// Lab names the lab the spec comes from, if any. A request may give
	// only a lab: {"lab": "cpus-ladder"}.
	Lab      string `json:"lab,omitempty"`
	Name     string `json:"name"`
	Mode     Mode   `json:"mode"`
	Duration string `json:"duration,omitempty"`
	// Interval is how often the lanes are sampled ("50ms"); the server's
	// own if empty.
	Interval string `json:"interval,omitempty"`
	// Repeat runs the spec this many times, a series (1 if 0).
	Repeat int    `json:"repeat,omitempty"`
	Lanes  []Lane `json:"lanes"`
}

// Lane is one container: a workload under limits.
type Lane struct {
	Name     string   `json:"name"`
	Workload Workload `json:"workload"`
	Limits   Limits   `json:"limits"`
	// Resources are the lane's limits in Kubernetes' words, instead of
	// Limits: a Kubernetes engine applies them to the lane's pod, a Docker
	// engine as the cgroup settings they make.
	Resources *PodResources `json:"resources,omitempty"`
	// StartAt and StopAt place a lane on the run's timeline ("10s"), so a
	// parallel run can have phases; empty is the run's start and end.
	StartAt string `json:"start_at,omitempty"`
	StopAt  string `json:"stop_at,omitempty"`
	// CPUBurst is the unused quota ("50ms") a period may carry over to
	// the next: cpu.cfs_burst_us on cgroup v1, cpu.max.burst on v2, which
	// the server writes into the lane's cgroup itself. Docker has no flag
	// for it (moby/moby#44204), nor Kubernetes a field (#104516).
	CPUBurst string `json:"cpu_burst,omitempty"`
	// MemoryHigh is cgroup v2's memory.high ("96m"): above it the kernel
	// reclaims the lane's memory and slows its allocations, where
	// memory.max (--memory) kills. The server writes it into the lane's
	// cgroup itself: Docker has no flag for it (--memory-reservation sets
	// memory.low).
	MemoryHigh string `json:"memory_high,omitempty"`
}

// Workload names a program of the project's workload image and its
// parameters. Which parameters apply depends on Kind.
type Workload struct {
	Kind     string  `json:"kind"`
	MB       int     `json:"mb,omitempty"`
	Threads  int     `json:"threads,omitempty"`
	Events   int     `json:"events,omitempty"`
	MaxPrime int     `json:"max_prime,omitempty"`
	Seconds  float64 `json:"seconds,omitempty"`
	RateMBps float64 `json:"rate_mb_s,omitempty"`
	// The http service.
	WorkUS     int   `json:"work_us,omitempty"`
	AllocKB    int   `json:"alloc_kb,omitempty"`
	GOMAXPROCS Value `json:"gomaxprocs,omitempty"`
	// The load generator: the http lane it targets, by name, and either a
	// closed loop (requests, concurrency) or an open one (rate, requests
	// per second).
	Target      string  `json:"target,omitempty"`
	Requests    int     `json:"requests,omitempty"`
	Concurrency int     `json:"concurrency,omitempty"`
	Rate        float64 `json:"rate,omitempty"`
	Burst       int     `json:"burst,omitempty"` // open loop: requests sent at once
	// The disk workloads: block size in bytes, and reads in flight.
	BS    Bytes `json:"bs,omitempty"`
	Depth int   `json:"depth,omitempty"`
	// A facilitator's service (KindImage), from a lab file only: an image
	// already on the engine, the port it serves on, and its command (the
	// image's CMD: the words after its entrypoint, separated by spaces; the
	// image's own when empty). On a load lane, Port is its target's, set
	// by Validate.
	Image string `json:"image,omitempty"`
	Port  int    `json:"port,omitempty"`
	Cmd   string `json:"command,omitempty"`
}

// Limits are the docker run flags Limit Lab supports, spelled as the CLI
// spells them. Values are kept as the user wrote them; Validate turns them
// into Resources.
type Limits struct {
	CPUs              Value `json:"cpus,omitempty"`
	CPUShares         Value `json:"cpu-shares,omitempty"`
	CpusetCpus        Value `json:"cpuset-cpus,omitempty"`
	CPUPeriod         Value `json:"cpu-period,omitempty"`
	CPUQuota          Value `json:"cpu-quota,omitempty"`
	Memory            Value `json:"memory,omitempty"`
	MemorySwap        Value `json:"memory-swap,omitempty"`
	MemoryReservation Value `json:"memory-reservation,omitempty"`
	PidsLimit         Value `json:"pids-limit,omitempty"`
	// Block IO: one device each, in the CLI's syntax ("/dev/sda:5mb",
	// "/dev/sda:100"); the device may be "auto", the disk under the
	// engine's data root.
	DeviceReadBps     Value `json:"device-read-bps,omitempty"`
	DeviceWriteBps    Value `json:"device-write-bps,omitempty"`
	DeviceReadIOps    Value `json:"device-read-iops,omitempty"`
	DeviceWriteIOps   Value `json:"device-write-iops,omitempty"`
	BlkioWeight       Value `json:"blkio-weight,omitempty"`
	BlkioWeightDevice Value `json:"blkio-weight-device,omitempty"`
	// Resources are a live change of a pod lane in Kubernetes' words
	// (ResolveResize); a lane's own resources go beside its workload.
	Resources *PodResources `json:"resources,omitempty"`
}

// Bytes is a size in bytes, given as a JSON number or as the docker CLI
// reads sizes ("1m", "64k", "4KiB": go-units' RAMInBytes, whose units are
// powers of 1024), so that dd's bs=1M is "1m". It is kept, and echoed, as
// a number of bytes.
type Bytes int

// maxBytes bounds a size, so that no unit overflows an int anywhere.
const maxBytes = 1 << 40

var bytesType = reflect.TypeFor[Bytes]()

// UnmarshalJSON accepts a whole number, a size with a unit, or null.
func (b *Bytes) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	bad := &json.UnmarshalTypeError{Value: string(data), Type: bytesType}
	if len(data) > 64 {
		bad.Value = fmt.Sprintf("%.64s…", data)
		return bad
	}
	var n int64
	switch {
	case bytes.Equal(data, []byte("null")):
	case len(data) > 0 && data[0] == '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return bad
		}
		v, err := units.RAMInBytes(s)
		if err != nil {
			return bad
		}
		n = v
	default:
		if err := json.Unmarshal(data, &n); err != nil {
			return bad
		}
	}
	if n < 0 || n > maxBytes {
		return bad
	}
	*b = Bytes(n)
	return nil
}

// Value is a limit as written: JSON strings and numbers are both accepted
// ("0.5" and 0.5 mean the same), and kept as text.
type Value string

// UnmarshalJSON accepts a string, a number or null.
func (v *Value) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*v = ""
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*v = Value(s)
		return nil
	default:
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("want a string or a number, got %s", b)
		}
		*v = Value(n.String())
		return nil
	}
}

// FieldError is one problem with a spec, located by lane (-1 for the run
// itself) and field, in the words of the docker CLI or engine where they have
// them.
type FieldError struct {
	Lane    int    `json:"lane"`
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (e FieldError) Error() string {
	if e.Lane < 0 {
		return fmt.Sprintf("%s: %s", e.Field, e.Message)
	}
	return fmt.Sprintf("lane %d: %s: %s", e.Lane, e.Field, e.Message)
}

// Errors is every problem found in a spec.
type Errors []FieldError

func (es Errors) Error() string {
	if len(es) == 0 {
		return "no errors"
	}
	if len(es) == 1 {
		return es[0].Error()
	}
	return es[0].Error() + " (and " + strconv.Itoa(len(es)-1) + " more)"
}

// With is l with every limit that change sets.
func (l Limits) With(change Limits) Limits {
	out := reflect.ValueOf(&l).Elem()
	c := reflect.ValueOf(change)
	for i := range c.NumField() {
		if !c.Field(i).IsZero() {
			out.Field(i).Set(c.Field(i))
		}
	}
	return l
}
