package experiments

import (
	"fmt"
	"strconv"
)

// Workload kinds the project's workload image runs.
const (
	KindMD5    = "md5"
	KindPrimes = "primes"
	KindSpin   = "spin"
	KindMem    = "mem"
)

// Kinds lists the workload kinds in the order the builder offers them.
var Kinds = []string{KindMD5, KindPrimes, KindSpin, KindMem}

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
	var ints []bound
	usesSeconds, usesRate := false, false
	switch w.Kind {
	case KindMD5:
		ints = []bound{{"mb", &w.MB, 64, 100000}}
	case KindPrimes:
		ints = []bound{{"threads", &w.Threads, 1, 64}, {"events", &w.Events, 10000, 100000000}, {"max_prime", &w.MaxPrime, 10000, 100000000}}
	case KindSpin:
		ints = []bound{{"threads", &w.Threads, 1, 64}}
		usesSeconds = true
		if w.Seconds == 0 {
			w.Seconds = 10
		}
	case KindMem:
		ints = []bound{{"mb", &w.MB, 100, 16384}}
		usesSeconds, usesRate = true, true
		if w.Seconds == 0 {
			w.Seconds = 5
		}
	case "":
		add("workload.kind", "missing: want one of %v", Kinds)
		return w, errs
	default:
		add("workload.kind", "unknown workload %q: want one of %v", w.Kind, Kinds)
		return w, errs
	}
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
	if w.Kind == KindPrimes && w.MaxPrime < 3 {
		add("workload.max_prime", "must be at least 3, got %d", w.MaxPrime)
	}
	for field, set := range map[string]bool{"mb": w.MB != 0, "threads": w.Threads != 0, "events": w.Events != 0, "max_prime": w.MaxPrime != 0} {
		if set && !used[field] {
			add("workload."+field, "does not apply to the %s workload", w.Kind)
		}
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
	return w, errs
}

// Args is the command line of the workload program for this workload: the
// same flags `limitlab workload` parses.
func (w Workload) Args() []string {
	args := []string{w.Kind}
	flag := func(name string, v int) {
		if v != 0 {
			args = append(args, "-"+name, strconv.Itoa(v))
		}
	}
	flagf := func(name string, v float64) {
		if v != 0 {
			args = append(args, "-"+name, strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	flag("mb", w.MB)
	flag("threads", w.Threads)
	flag("events", w.Events)
	flag("max-prime", w.MaxPrime)
	flagf("seconds", w.Seconds)
	flagf("rate", w.RateMBps)
	return args
}
