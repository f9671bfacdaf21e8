package finder

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/docker/go-units"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// FindSpec asks for the smallest limit at which a service meets a target
// under a load: Limit Lab runs the service under one limit after another
// (probes), each a run of its own in the queue, bisecting the search's
// range until the answer is within its resolution.
type FindSpec struct {
	Name string `json:"name,omitempty"`
	// Lab names a lab that is a search ({"lab": "right-size-go"}): its
	// service, load, target and range, and nothing else may be given.
	Lab string `json:"lab,omitempty"`
	// Service is the built-in http service: its work_us, alloc_kb and
	// gomaxprocs.
	Service specs.Workload `json:"service"`
	Load    FindLoad       `json:"load"`
	Target  FindTarget     `json:"target"`
	Search  FindSearch     `json:"search"`
	// Then, if given, is a second search of the other limit, run once this
	// one has its answer, with that answer fixed (both in turn: --cpus,
	// then --memory at the --cpus found).
	Then *FindSearch `json:"then,omitempty"`
	// Fixed are the service's other limits, the same in every probe.
	Fixed specs.Limits `json:"fixed,omitempty"`
}

// FindLoad is each probe's load: an open loop at Rate requests a second,
// or a closed one of Concurrency clients, for Seconds.
type FindLoad struct {
	Rate        float64 `json:"rate,omitempty"`
	Concurrency int     `json:"concurrency,omitempty"`
	Seconds     float64 `json:"seconds"`
}

// FindSearch is the limit searched and its range: "cpus" (cores) or
// "memory" (a size, as --memory takes it), from Min to Max at Resolution,
// each limit run at most Repeats times.
type FindSearch struct {
	Limit      LimitKind   `json:"limit"`
	Min        specs.Value `json:"min"`
	Max        specs.Value `json:"max"`
	Resolution specs.Value `json:"resolution"`
	Repeats    int         `json:"repeats,omitempty"`
}

// LimitKind is the limit a search takes: FindCPUs or FindMemory.
type LimitKind string

// The limits a search may take.
const (
	FindCPUs   LimitKind = "cpus"
	FindMemory LimitKind = "memory"
)

// A search's bounds.
const (
	DefaultRepeats = 3
	// MaxProbes bounds a search's runs, whatever its range: with the
	// queue's and the participant's quotas, it bounds its time.
	MaxProbes = 40
)

// DecodeFind decodes a search as a request gives it, its keys exact: a
// search of its own, or the id of a search lab, which the catalogue
// resolves.
func DecodeFind(data []byte) (FindSpec, specs.Errors) {
	var fs FindSpec
	if err := specs.StrictDecode(data, &fs); err != nil {
		return fs, specs.Errors{{Lane: -1, Field: specs.JSONField(err, "find"), Message: specs.JSONMessage(err)}}
	}
	if fs.Lab == "" && fs.Service.NamesImage() {
		return fs, specs.Errors{specs.ImageRefused(-1, "service.image")}
	}
	if fs.Lab != "" && fs != (FindSpec{Lab: fs.Lab}) {
		return FindSpec{}, specs.Errors{{Lane: -1, Field: "lab", Message: "give either a lab or a search, not both"}}
	}
	return fs, nil
}

// LabFind is a search lab's target and range.
type LabFind struct {
	Target FindTarget  `json:"target"`
	Search FindSearch  `json:"search"`
	Then   *FindSearch `json:"then,omitempty"`
}

// Range is a search's grid in its own unit (cores, or MiB for memory),
// checked; errors name the field.
func (fs FindSpec) Range() (min, max, resolution float64, errs specs.Errors) {
	bad := func(field, msg string) {
		errs = append(errs, specs.FieldError{Lane: -1, Field: "search." + field, Message: msg})
	}
	parse := func(field string, v specs.Value) float64 {
		s := strings.TrimSpace(string(v))
		var x float64
		var err error
		switch fs.Search.Limit {
		case FindCPUs:
			x, err = strconv.ParseFloat(s, 64)
			if err == nil && (math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 || x > 1024) {
				err = fmt.Errorf("out of range")
			}
			if err != nil {
				bad(field, fmt.Sprintf("want a number of CPUs above 0, such as 0.5, got %q", s))
			}
		case FindMemory:
			var n int64
			n, err = units.RAMInBytes(s)
			if err != nil || n < 6<<20 || n > 1<<40 {
				bad(field, fmt.Sprintf("want a size from 6m to 1t, such as 128m, got %q", s))
				return 0
			}
			x = float64(n) / (1 << 20)
		}
		return x
	}
	switch fs.Search.Limit {
	case FindCPUs, FindMemory:
	default:
		bad("limit", fmt.Sprintf("want %q or %q, got %q", FindCPUs, FindMemory, fs.Search.Limit))
		return 0, 0, 0, errs
	}
	min, max, resolution = parse("min", fs.Search.Min), parse("max", fs.Search.Max), parse("resolution", fs.Search.Resolution)
	if errs != nil {
		return 0, 0, 0, errs
	}
	if max <= min {
		bad("max", "want a maximum above the minimum")
	} else if resolution > max-min {
		bad("resolution", "want a resolution at most the range from min to max")
	} else if (max-min)/resolution > 1000 {
		bad("resolution", "more than 1000 steps from min to max: take a coarser resolution")
	}
	return min, max, resolution, errs
}

// Check checks a search's own fields; the probes' specs are checked
// against the engine as every run's is. Errors name the field.
func (fs FindSpec) Check() (*Bisection, specs.Errors) {
	var errs specs.Errors
	bad := func(field, msg string) { errs = append(errs, specs.FieldError{Lane: -1, Field: field, Message: msg}) }
	if !fs.Service.Service() {
		bad("service.kind", fmt.Sprintf("a search runs the built-in %q service or a facilitator's image, got %q", specs.KindHTTP, fs.Service.Kind))
	}
	l := fs.Load
	switch {
	case (l.Rate > 0) == (l.Concurrency > 0):
		bad("load", "give either a rate (an open loop, requests a second) or a concurrency (a closed loop)")
	case l.Rate < 0 || l.Rate > 10000 || math.IsNaN(l.Rate):
		bad("load.rate", "want from 1 to 10000 requests a second")
	case l.Concurrency < 0 || l.Concurrency > 256:
		bad("load.concurrency", "want from 1 to 256 clients")
	}
	if !(l.Seconds >= 2 && l.Seconds <= 60) {
		bad("load.seconds", "want from 2 to 60 seconds of load a probe")
	}
	errs = append(errs, fs.Target.Check()...)
	repeats := fs.Search.Repeats
	if repeats == 0 {
		repeats = DefaultRepeats
	}
	if msg := repeatsWrong(repeats); msg != "" {
		bad("search.repeats", msg)
	}
	min, max, res, rerrs := fs.Range()
	errs = append(errs, rerrs...)
	errs = append(errs, fs.checkTurns()...)
	if errs != nil {
		return nil, errs
	}
	b, err := NewBisection(min, max, res, repeats, fs.Target)
	if err != nil {
		return nil, specs.Errors{{Lane: -1, Field: "search", Message: err.Error()}}
	}
	return b, nil
}

// ProbeService and ProbeLoad are the names of a probe's two lanes.
const (
	ProbeService = "service"
	ProbeLoad    = "load"
)

// ProbeSpec is the run of one probe: the service under the limit, and its
// load.
func (fs FindSpec) ProbeSpec(limit float64) specs.Spec {
	svc := specs.Lane{Name: ProbeService, Workload: fs.Service, Limits: fs.Fixed}
	switch fs.Search.Limit {
	case FindCPUs:
		svc.Limits.CPUs = specs.Value(strconv.FormatFloat(limit, 'f', -1, 64))
	case FindMemory:
		svc.Limits.Memory = specs.Value(strconv.FormatInt(int64(math.Round(limit)), 10) + "m")
	}
	load := specs.Lane{Name: ProbeLoad, Workload: specs.Workload{Kind: specs.KindLoad, Target: ProbeService,
		Rate: fs.Load.Rate, Concurrency: fs.Load.Concurrency, Seconds: fs.Load.Seconds}}
	name := fs.Name
	if name == "" {
		name = "find the limit"
	}
	return specs.Spec{Name: fmt.Sprintf("%s: %s %s", name, fs.Search.Limit, LimitText(fs.Search.Limit, limit)), Mode: specs.Sequential,
		Duration: strconv.Itoa(int(fs.Load.Seconds)+40) + "s", Lanes: []specs.Lane{svc, load}}
}

// LimitText is a searched limit in the docker CLI's words: 0.65 (CPUs),
// 96m.
func LimitText(limit LimitKind, v float64) string {
	if limit == FindMemory {
		return strconv.FormatInt(int64(math.Round(v)), 10) + "m"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// ServiceNeeds is what the allotment model says a service needs under an
// open loop: rate × CPU per request, in cores (0 for a closed loop, which
// sends no faster than it is served). Below it the service cannot keep up
// and its queue, and so its p99, grows without bound; the answer lies
// above it by the headroom its tail needs.
func (fs FindSpec) ServiceNeeds() float64 {
	if fs.Load.Rate <= 0 || fs.Service.WorkUS <= 0 {
		return 0
	}
	return fs.Load.Rate * float64(fs.Service.WorkUS) / 1e6
}

// Headroom is the share a recommended limit leaves above the smallest
// limit that met the target.
const Headroom = 0.25

// Recommendation is what a search suggests setting, and why.
type Recommendation struct {
	Request    string `json:"request"`
	Limit      string `json:"limit"`
	WhyRequest string `json:"why_request"`
	WhyLimit   string `json:"why_limit"`
}

// Recommend turns a search's answer into a request and a limit: the
// request is the smallest limit that met the target, the limit that with
// Headroom, rounded up to the search's resolution and kept within its
// maximum.
func (fs FindSpec) Recommend(b *Bisection, a Answer) *Recommendation {
	if !a.Found {
		return nil
	}
	steps := math.Ceil(a.Limit * Headroom / b.Resolution)
	limit := math.Min(b.Max, a.Limit+steps*b.Resolution)
	limit = math.Round(limit*1e6) / 1e6
	unit := fs.Search.Limit
	r := &Recommendation{Request: LimitText(unit, a.Limit), Limit: LimitText(unit, limit)}
	r.WhyRequest = fmt.Sprintf("%s %s is the smallest %s at which the service met its target here: a request of it keeps that much for the service under contention.",
		unit, r.Request, unit)
	r.WhyLimit = fmt.Sprintf("%s %s leaves %.0f%% above it, rounded up to the search's resolution, for a noisier host, a burst, or a slower node than this one.",
		unit, r.Limit, 100*Headroom)
	if limit >= b.Max && a.Limit < b.Max {
		r.WhyLimit += " It is the search's maximum: the headroom was cut there."
	}
	return r
}

// JudgeFind compares a search's answer with the allotment model: under an
// open loop the service needs rate × work of CPU, and the answer lies
// above that floor (by the headroom its tail needs). judged is false for
// a search the model has no floor for, or no answer.
func JudgeFind(fs FindSpec, a Answer) (judged, pass bool, text string) {
	need := fs.ServiceNeeds()
	if fs.Search.Limit != FindCPUs || need == 0 || !a.Found {
		return false, false, ""
	}
	if a.Limit > need {
		return true, true, fmt.Sprintf("As predicted: the model puts the floor at %.3g cores (%.3g requests a second × %d µs each), and the answer, %s, lies above it; the distance is the headroom the tail needs.",
			need, fs.Load.Rate, fs.Service.WorkUS, LimitText(FindCPUs, a.Limit))
	}
	return true, false, fmt.Sprintf("Not as predicted: the answer, %s, is at or below the model's floor of %.3g cores (%.3g requests a second × %d µs each), where the service cannot keep up.",
		LimitText(FindCPUs, a.Limit), need, fs.Load.Rate, fs.Service.WorkUS)
}
