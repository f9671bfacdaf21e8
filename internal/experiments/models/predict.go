package models

import (
	"fmt"
	"math"
	"strings"

	"github.com/limitlab/limitlab/internal/experiments/kernelfiles"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// ModelHost is what the model needs of the host.
type ModelHost struct {
	NCPU     int
	CgroupV2 bool
}

// DemandOn is Demand with the host's share-to-weight conversion.
func DemandOn(w specs.Workload, r specs.Resources, h ModelHost) CPUDemand {
	d := Demand(w, r)
	d.Shares = kernelfiles.WeightOfShares(r.CPUShares, h.CgroupV2)
	return d
}

// workUnits is how much work a workload asks for, in units whose CPU cost
// is the same from lane to lane of one kind: MiB for md5, and for primes
// events times the cost of a search below max_prime (trial division: about
// n^1.5/ln n). A spin lane is time-bound. A mem lane is not CPU-bound and
// the model does not apply to it.
func workUnits(w specs.Workload) (units float64, timeBound, ok bool) {
	switch w.Kind {
	case specs.KindMD5:
		return float64(w.MB), false, true
	case specs.KindPrimes:
		n := float64(max(w.MaxPrime, 3))
		return float64(w.Events) * math.Pow(n, 1.5) / math.Log(n), false, true
	case specs.KindSpin:
		return 0, true, true
	}
	return 0, false, false
}

// LaneOutcome is what was measured of a lane, as far as the model needs.
type LaneOutcome struct {
	Start      float64 // seconds after the run started
	Wall       float64
	CPUSeconds float64 // user + system
	// Completed is true when the workload ran to its end (exit 0, not
	// killed at the run's duration or by a stop).
	Completed bool
	Applied   specs.Resources // the limits the engine applied at the start
	// WindowCores is the mean CPU, in cores, measured while every lane of
	// a parallel run was running (0 when unknown). Starts and ends are
	// staggered by the engine's start-up of each container; the window
	// compares the lanes where they really compete.
	WindowCores float64
}

// CoreSample is one measured sample of a lane's CPU: the cores it used in
// the DT seconds up to T.
type CoreSample struct {
	T, DT, Cores float64
	IOBps        float64 // block IO read and written, bytes per second
	// CFS periods and periods throttled in the sample, milliseconds
	// throttled (summed over the CPUs the group was throttled on), and
	// memory in use.
	Periods, ThrottledPeriods float64
	ThrottledMs               float64
	MemBytes                  float64
	// A Go workload's GOMAXPROCS as it last reported it, and a load
	// lane's p99 latency over its last reporting interval (0: none
	// reported in this sample).
	GOMAXPROCS float64
	P99Ms      float64
}

// WindowMean is the mean of the samples that lie wholly within [from, to],
// weighted by their length; 0 if there are none.
func WindowMean(samples []CoreSample, from, to float64) float64 {
	return windowMean(samples, from, to, func(s CoreSample) float64 { return s.Cores })
}

// ContendedIO is each lane's mean block IO rate, bytes per second, while
// every lane was writing or reading: from the last lane's first sample
// with IO to the first lane's last one. A lane's start and end are not
// enough to tell: it starts its IO a moment after its container starts,
// and its container is seen to exit a moment after its last write. Ticks
// within the window at which a lane did no IO count, as zero: a scheduler
// that gives the whole disk to one lane for a while is what a weight does.
// Lanes are sampled at the same ticks; slack absorbs the microseconds
// between their readings.
func ContendedIO(lanes [][]CoreSample, slack float64) []float64 {
	out := make([]float64, len(lanes))
	from, to := math.Inf(-1), math.Inf(1)
	for _, l := range lanes {
		first, last := math.Inf(1), math.Inf(-1)
		for _, s := range l {
			if s.IOBps > 0 {
				first, last = min(first, s.T-s.DT), max(last, s.T)
			}
		}
		from, to = max(from, first), min(to, last)
	}
	if !(from < to) {
		return out
	}
	for i, l := range lanes {
		out[i] = windowMean(l, from-slack, to+slack, func(s CoreSample) float64 { return s.IOBps })
	}
	return out
}

func windowMean(samples []CoreSample, from, to float64, of func(CoreSample) float64) float64 {
	sum, span := 0.0, 0.0
	for _, s := range samples {
		if s.T-s.DT >= from && s.T <= to {
			sum += of(s) * s.DT
			span += s.DT
		}
	}
	if span == 0 {
		return 0
	}
	return sum / span
}

// Change is a live limit change: from At (seconds after the run started)
// lane Lane runs with Applied.
type Change struct {
	At      float64
	Lane    int
	Applied specs.Resources
}

// LanePrediction is the model's account of one lane.
type LanePrediction struct {
	OK    bool
	Cores float64 // mean cores over the lane's life
	Wall  float64 // seconds
}

// Prediction is the model's account of a run.
type Prediction struct {
	Lanes []LanePrediction
	// Together is each lane's allotment while all the lanes of a parallel
	// run compete, before any lane ends (nil when sequential, or when live
	// changes moved the limits).
	Together []float64
	Why      string // why some lane has no prediction
}

// Predict plays a run through the model. The allotment comes from the spec
// (threads, quota, cpuset, shares); the work a lane needs, in CPU seconds,
// is calibrated once per workload kind from the first lane of that kind
// that completed, so lanes of one kind are compared on the spec alone.
// Sequential lanes run alone; parallel lanes compete from their measured
// starts. Live changes take effect from their time.
func Predict(plan specs.Plan, h ModelHost, out []LaneOutcome, changes []Change) Prediction {
	n := len(plan.Lanes)
	p := Prediction{Lanes: make([]LanePrediction, n)}
	perUnit := map[string]float64{}
	for i, l := range plan.Lanes {
		units, timeBound, ok := workUnits(l.Workload)
		if ok && !timeBound && units > 0 && out[i].Completed && out[i].CPUSeconds > 0 {
			if _, set := perUnit[l.Workload.Kind]; !set {
				perUnit[l.Workload.Kind] = out[i].CPUSeconds / units
			}
		}
	}
	sims := make([]SimLane, n)
	ok := make([]bool, n)
	var why []string
	for i, l := range plan.Lanes {
		units, timeBound, modelled := workUnits(l.Workload)
		res := out[i].Applied
		if res == (specs.Resources{}) {
			res = l.Resources
		}
		sims[i] = SimLane{Demand: DemandOn(l.Workload, res, h)}
		switch {
		case !modelled:
			why = append(why, fmt.Sprintf("lane %d (%s): the %s workload is not CPU-bound", i+1, l.Name, l.Workload.Kind))
			continue
		case timeBound:
			sims[i].Seconds = l.Workload.Seconds
		case perUnit[l.Workload.Kind] == 0:
			why = append(why, fmt.Sprintf("lane %d (%s): no %s lane completed to calibrate its work", i+1, l.Name, l.Workload.Kind))
			continue
		default:
			sims[i].Work = units * perUnit[l.Workload.Kind]
		}
		ok[i] = true
		if plan.Mode == specs.Parallel {
			sims[i].Start = out[i].Start
			if l.StopAt > 0 {
				sims[i].StopAt = l.StopAt.Seconds()
			}
		}
		for _, c := range changes {
			if c.Lane == i {
				at := c.At
				if plan.Mode == specs.Sequential {
					at -= out[i].Start
				}
				sims[i].Changes = append(sims[i].Changes, DemandChange{At: at, Demand: DemandOn(l.Workload, c.Applied, h)})
			}
		}
	}
	limit := plan.Duration.Seconds()
	record := func(i int, r SimResult) {
		if ok[i] && !math.IsInf(r.Wall, 1) && r.Wall > 0 {
			p.Lanes[i] = LanePrediction{OK: true, Cores: r.Cores, Wall: r.Wall}
		}
	}
	if plan.Mode == specs.Sequential {
		for i := range sims {
			record(i, Simulate(sims[i:i+1], h.NCPU, limit)[0])
		}
	} else {
		demands := make([]CPUDemand, n)
		for i := range sims {
			demands[i] = sims[i].Demand
		}
		if len(changes) == 0 {
			p.Together = Allot(demands, h.NCPU)
		}
		var idx []int
		var lanes []SimLane
		for i := range sims {
			// Unmodelled lanes still take CPU; the model counts what they
			// are allowed, which is all it knows.
			if ok[i] {
				idx = append(idx, i)
				lanes = append(lanes, sims[i])
			}
		}
		for k, r := range Simulate(lanes, h.NCPU, limit) {
			record(idx[k], r)
		}
	}
	p.Why = strings.Join(why, "; ")
	return p
}

// Expected is each lane's CPU, in cores, from the spec alone: alone for a
// sequential run, all together for a parallel one. Lanes the model does not
// apply to get -1.
func Expected(plan specs.Plan, h ModelHost) []float64 {
	demands := make([]CPUDemand, len(plan.Lanes))
	for i, l := range plan.Lanes {
		demands[i] = DemandOn(l.Workload, l.Resources, h)
	}
	var cores []float64
	if plan.Mode == specs.Sequential {
		for _, d := range demands {
			cores = append(cores, Allot([]CPUDemand{d}, h.NCPU)[0])
		}
	} else {
		cores = Allot(demands, h.NCPU)
	}
	for i, l := range plan.Lanes {
		if _, _, ok := workUnits(l.Workload); !ok {
			cores[i] = -1
		}
	}
	return cores
}

// Modelled says whether the CPU allotment model predicts this workload: it
// must be CPU-bound with a known amount of work or time.
func Modelled(w specs.Workload) bool {
	_, _, ok := workUnits(w)
	return ok
}
