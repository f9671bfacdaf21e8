package specs

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/limitlab/limitlab/internal/workload/wire"
)

// Workload kinds the project's workload image runs.
const (
	KindMD5    = "md5"
	KindPrimes = "primes"
	KindSpin   = "spin"
	KindMem    = "mem"
	KindHTTP   = "http"
	KindLoad   = "load"
	// Block IO in a volume of the lane's own, with O_DIRECT.
	KindDiskWrite = "disk-write"
	KindDiskRead  = "disk-read"
)

// Kinds lists the workload kinds in the order the builder offers them.
var Kinds = []string{KindMD5, KindPrimes, KindSpin, KindMem, KindHTTP, KindLoad, KindDiskWrite, KindDiskRead, KindRuntimes}

// Disk says whether the workload does block IO, and so needs a volume.
func (w Workload) Disk() bool { return w.Kind == KindDiskWrite || w.Kind == KindDiskRead }

// Unit is what a workload's throughput counts.
func (w Workload) Unit() string {
	switch w.Kind {
	case KindMD5:
		return "MB/s"
	case KindPrimes:
		return "events/s"
	case KindSpin:
		return "Mloops/s"
	case KindMem:
		return "MB/s"
	case KindHTTP, KindLoad:
		return "req/s"
	case KindDiskWrite, KindDiskRead:
		return "MB/s"
	case KindRuntimes:
		return "rounds/s"
	}
	return ""
}

type bound struct {
	field    string
	val      *int
	def, max int
}

// validateWorkload fills defaults and checks ranges. Fields that do not apply
// to the kind are errors: a typo should not silently do nothing.
func validateWorkload(w Workload) (Workload, Errors) {
	var errs Errors
	add := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	k, ok := checkKind(&w, add)
	if !ok {
		return w, errs
	}
	used := checkBounds(k.ints, add)
	checkApplies(w, k, used, add)
	return w, errs
}

// kindFields are the fields a workload kind takes: its whole numbers with
// their bounds, and whether it runs for seconds and at a rate.
type kindFields struct {
	ints                  []bound
	usesSeconds, usesRate bool
}

// checkKind checks a workload's kind and the fields only it has, sets its
// defaults, and says which of the shared fields it takes.
func checkKind(w *Workload, add func(field, format string, args ...any)) (k kindFields, ok bool) {
	switch w.Kind {
	case KindMD5:
		k.ints = []bound{{"mb", &w.MB, 64, 100000}}
	case KindPrimes:
		k.ints = []bound{{"threads", &w.Threads, 1, 64}, {"events", &w.Events, 10000, 100000000}, {"max_prime", &w.MaxPrime, 10000, 100000000}}
	case KindSpin:
		k.ints = []bound{{"threads", &w.Threads, 1, 64}}
		k.usesSeconds = true
		if w.Seconds == 0 {
			w.Seconds = 10
		}
	case KindMem:
		k.ints = []bound{{"mb", &w.MB, 100, 16384}}
		k.usesSeconds, k.usesRate = true, true
		if w.Seconds == 0 {
			w.Seconds = 5
		}
	case KindDiskWrite:
		k.ints = []bound{{"mb", &w.MB, 100, 65536}, {"bs", (*int)(&w.BS), 1 << 20, 64 << 20}, {"depth", &w.Depth, 1, 64}}
	case KindDiskRead:
		k.ints = []bound{{"mb", &w.MB, 64, 65536}, {"bs", (*int)(&w.BS), 4096, 64 << 20}, {"depth", &w.Depth, 1, 256}}
		k.usesSeconds = true
		if w.Seconds == 0 {
			w.Seconds = 10
		}
	case KindHTTP:
		// seconds 0: serve until the lanes that load it have ended.
		k.ints = []bound{{"work_us", &w.WorkUS, 1000, 1000000}}
		k.usesSeconds = true
		if w.AllocKB < 0 || w.AllocKB > 65536 {
			add("workload.alloc_kb", "must be from 0 to 65536, got %d", w.AllocKB)
		}
		switch g := string(w.GOMAXPROCS); g {
		case "":
			w.GOMAXPROCS = "auto"
		case "auto", "host":
		default:
			if n, err := strconv.Atoi(g); err != nil || n < 1 || n > 1024 {
				add("workload.gomaxprocs", "want auto, host or a number from 1 to 1024, got %q", g)
			}
		}
	case KindRuntimes:
		k.usesSeconds = true
		if w.Seconds == 0 {
			w.Seconds = 10
		}
	case KindImage:
		// seconds 0: serve until the lanes that load it have ended.
		k.usesSeconds = true
		validateImage(w, add)
	case KindLoad:
		k.ints = []bound{{"concurrency", &w.Concurrency, 1, 1024}}
		k.usesSeconds = true
		if w.Target == "" {
			add("workload.target", "missing: name the http lane to load")
		}
		if w.Requests < 0 || w.Requests > 10000000 {
			add("workload.requests", "must be from 0 to 10000000, got %d", w.Requests)
		}
		if w.Rate < 0 || w.Rate > 100000 {
			add("workload.rate", "must be from 0 (closed loop) to 100000 requests/s, got %g", w.Rate)
		}
		if w.Requests == 0 && w.Seconds == 0 {
			add("workload.requests", "give requests, or seconds to run for")
		}
		if w.Burst < 0 || w.Burst > 10000 || (w.Burst > 0 && w.Rate == 0) {
			add("workload.burst", "want 1 to 10000 requests at once, with a rate (open loop), got %d", w.Burst)
		}
	case "":
		add("workload.kind", "missing: want one of %v", Kinds)
		return k, false
	default:
		add("workload.kind", "unknown workload %q: want one of %v", w.Kind, Kinds)
		return k, false
	}
	return k, true
}

// checkBounds gives each whole number its default or checks its bounds,
// and says which fields the kind took.
func checkBounds(ints []bound, add func(field, format string, args ...any)) map[string]bool {
	used := map[string]bool{}
	for _, b := range ints {
		used[b.field] = true
		switch {
		case *b.val == 0:
			*b.val = b.def
		case *b.val < 1 || *b.val > b.max:
			add("workload."+b.field, "must be from 1 to %d, got %d", b.max, *b.val)
		}
	}
	return used
}

// checkApplies refuses the fields a kind does not take, and checks the
// seconds, rate and block size of those that do.
func checkApplies(w Workload, k kindFields, used map[string]bool, add func(field, format string, args ...any)) {
	usesSeconds, usesRate := k.usesSeconds, k.usesRate
	if w.Kind == KindPrimes && w.MaxPrime < 3 {
		add("workload.max_prime", "must be at least 3, got %d", w.MaxPrime)
	}
	for field, set := range map[string]bool{"mb": w.MB != 0, "threads": w.Threads != 0, "events": w.Events != 0, "max_prime": w.MaxPrime != 0,
		"work_us": w.WorkUS != 0, "concurrency": w.Concurrency != 0, "bs": w.BS != 0, "depth": w.Depth != 0} {
		if set && !used[field] {
			add("workload."+field, "does not apply to the %s workload", w.Kind)
		}
	}
	for field, set := range map[string]bool{"alloc_kb": w.AllocKB != 0, "gomaxprocs": w.GOMAXPROCS != ""} {
		if set && w.Kind != KindHTTP {
			add("workload."+field, "does not apply to the %s workload", w.Kind)
		}
	}
	for field, set := range map[string]bool{"target": w.Target != "", "requests": w.Requests != 0, "rate": w.Rate != 0, "burst": w.Burst != 0} {
		if set && w.Kind != KindLoad {
			add("workload."+field, "does not apply to the %s workload", w.Kind)
		}
	}
	if w.Kind != KindImage {
		for field, set := range map[string]bool{"image": w.Image != "", "port": w.Port != 0, "command": w.Cmd != ""} {
			if set {
				add("workload."+field, "does not apply to the %s workload", w.Kind)
			}
		}
	}
	if w.Disk() && w.BS%4096 != 0 {
		add("workload.bs", "must be a multiple of 4096 bytes for O_DIRECT, got %d", w.BS)
	}
	if usesSeconds {
		if w.Seconds < 0 || w.Seconds > MaxDuration.Seconds() {
			add("workload.seconds", "must be from 0 to %g, got %g", MaxDuration.Seconds(), w.Seconds)
		}
	} else if w.Seconds != 0 {
		add("workload.seconds", "does not apply to the %s workload", w.Kind)
	}
	if usesRate {
		if w.RateMBps < 0 || w.RateMBps > 100000 {
			add("workload.rate_mb_s", "must be from 0 (as fast as it can) to 100000, got %g", w.RateMBps)
		}
	} else if w.RateMBps != 0 {
		add("workload.rate_mb_s", "does not apply to the %s workload", w.Kind)
	}
}

// Command is the workload program's command line for this workload, in
// the wire format the workload parses; a load reaches its service on
// loopback, in the service's network namespace.
func (w Workload) Command() wire.Command { return w.CommandAt(wire.Loopback) }

// CommandAt is Command with a load's service at host (an address), where
// the load does not share its network namespace (a pod of its own).
func (w Workload) CommandAt(host string) wire.Command {
	c := wire.Command{Kind: w.Kind, MB: w.MB, Threads: w.Threads, Events: w.Events, MaxPrime: w.MaxPrime,
		Seconds: w.Seconds, RateMBps: w.RateMBps, WorkUS: w.WorkUS, AllocKB: w.AllocKB, GOMAXPROCS: string(w.GOMAXPROCS),
		Requests: w.Requests, Concurrency: w.Concurrency, RPS: w.Rate, Burst: w.Burst, BS: int(w.BS), Depth: w.Depth}
	if w.Kind == KindLoad {
		// A load lane shares its service's network namespace.
		port := wire.ServicePort
		if w.Port != 0 {
			port = w.Port
		}
		c.Target = wire.ServiceURLAt(host, port)
	}
	return c
}

// Args is the command line of the workload program for this workload; a
// facilitator's service's is its own command.
func (w Workload) Args() []string { return w.ArgsAt(wire.Loopback) }

// ArgsAt is Args with a load's service at host (CommandAt).
func (w Workload) ArgsAt(host string) []string {
	if w.Kind == KindImage {
		return strings.Fields(w.Cmd)
	}
	return w.CommandAt(host).Args()
}

// KindRuntimes asks the language runtimes in the runtimes image (Go,
// Java, Node.js and Python: images/runtimes) what CPUs and memory they
// believe they have, in rounds, for its seconds.
const KindRuntimes = "runtimes"
