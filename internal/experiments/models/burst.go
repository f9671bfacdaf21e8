package models

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// BurstScenario is a service under a CPU quota and the bursts of requests
// it is sent.
type BurstScenario struct {
	Work    time.Duration // CPU per request
	Threads int           // Go threads running at once (GOMAXPROCS)
	Quota   time.Duration // per period
	Period  time.Duration
	Burst   time.Duration // unused quota a period may carry over
	// Requests arrive Requests at a time, every Every.
	Requests int
	Every    time.Duration
}

// BurstPrediction is what the model expects of a BurstScenario.
type BurstPrediction struct {
	ThrottledPerBurst float64       // CFS periods a burst is throttled in
	P99               time.Duration // of the requests' latencies
}

// PredictBursts simulates CFS bandwidth control in steps of 50 µs: the
// group's runtime is refilled at each period's start by the quota, up to
// quota + burst (the kernel's __refill_cfs_bandwidth_runtime), and its
// threads are throttled until the next period once it is spent. The
// service runs its queued requests on its threads, first come first
// served. Bursts arrive at twenty phases of the period, six in a row each
// (so that the runtime carried between bursts is what it is in a long
// run), and the throttled periods and the latencies of them all make the
// prediction.
func PredictBursts(s BurstScenario) BurstPrediction {
	const step = 50 * time.Microsecond
	const phases, bursts = 20, 6
	if s.Threads < 1 || s.Requests < 1 || s.Period <= 0 || s.Quota <= 0 || s.Every <= 0 || s.Work <= 0 {
		return BurstPrediction{}
	}
	var latencies []time.Duration
	throttled := 0
	for k := range phases {
		first := time.Duration(k) * s.Period / phases
		runtime := s.Quota + s.Burst
		next := s.Period // the next period's start
		arrive, arrived := first, 0
		type request struct{ left, at time.Duration }
		var queue []request
		held, counted := false, false
		for t := time.Duration(0); arrived < bursts || len(queue) > 0; t += step {
			if t >= next {
				runtime = min(runtime+s.Quota, s.Quota+s.Burst)
				held, counted = false, false
				next += s.Period
			}
			if arrived < bursts && t >= arrive {
				for range s.Requests {
					queue = append(queue, request{left: s.Work, at: arrive})
				}
				arrived, arrive = arrived+1, arrive+s.Every
			}
			if held || len(queue) == 0 {
				continue
			}
			running := min(s.Threads, len(queue))
			each := step
			if need := time.Duration(running) * step; runtime < need {
				each, held = runtime/time.Duration(running), true
				if !counted {
					throttled, counted = throttled+1, true
				}
			}
			for i := range running {
				used := min(each, queue[i].left)
				queue[i].left -= used
				runtime -= used
			}
			kept := queue[:0]
			for _, r := range queue {
				if r.left > 0 {
					kept = append(kept, r)
				} else {
					latencies = append(latencies, t+step-r.at)
				}
			}
			queue = kept
		}
	}
	slices.Sort(latencies)
	p99 := latencies[max(0, int(math.Ceil(0.99*float64(len(latencies))))-1)]
	return BurstPrediction{ThrottledPerBurst: float64(throttled) / (phases * bursts), P99: p99}
}

// BurstOutcome is what was measured of a lane: a service's throttled
// periods, a load's requests and p99.
type BurstOutcome struct {
	Completed        bool
	CPUSeconds       float64 // a service's, user and system
	ThrottledPeriods uint64
	Requests         int64
	P99Ms            float64
}

// JudgeBurst gives the verdict of a lab judged by MetricBurst: for each
// http lane under a quota that a load with bursts meets, the CFS periods
// each burst is throttled in, predicted by PredictBursts at the service's
// demand as measured. That is the least CPU per request served that any of
// the lab's services spent: more than the work a request asks for by the
// service's own cost of a request (its HTTP handling and Go runtime), and
// least where it was not throttled, which costs CPU of its own. The load's
// p99 is predicted and measured beside it, and not judged: it moves with
// when the load's requests reach the service and with the load's own CPU on
// the same host, which the model leaves out.
func JudgeBurst(spec specs.VerdictSpec, plan specs.Plan, out []BurstOutcome, ncpu int) Verdict {
	v := Verdict{Metric: spec.Metric, Tolerance: spec.Tolerance}
	type pair struct{ svc, load int }
	var pairs []pair
	demand := time.Duration(0)
	for j, load := range plan.Lanes {
		i := load.Target
		if i < 0 || load.Workload.Burst <= 0 || load.Workload.Rate <= 0 || plan.Lanes[i].Resources.CFSQuotaUs() <= 0 {
			continue
		}
		if !out[i].Completed || !out[j].Completed || out[j].Requests == 0 {
			v.Explanation = fmt.Sprintf("Not judged: %s or its load %s did not run to its end.", plan.Lanes[i].Name, load.Name)
			return v
		}
		pairs = append(pairs, pair{i, j})
		if out[i].CPUSeconds > 0 {
			d := time.Duration(out[i].CPUSeconds / float64(out[j].Requests) * float64(time.Second))
			if demand == 0 || d < demand {
				demand = d
			}
		}
	}
	if len(pairs) == 0 {
		v.Explanation = "Not judged: no http lane under a CPU quota meets a load of bursts."
		return v
	}
	var lines []string
	for _, pr := range pairs {
		svc, load := plan.Lanes[pr.svc], plan.Lanes[pr.load]
		res := svc.Resources
		work := demand
		if work == 0 {
			work = time.Duration(svc.Workload.WorkUS) * time.Microsecond
		}
		s := BurstScenario{
			Work: work, Threads: GoThreads(svc.Workload, res.CPULimit(), ncpu),
			Quota: time.Duration(res.CFSQuotaUs()) * time.Microsecond, Period: time.Duration(res.CFSPeriodUs()) * time.Microsecond,
			Burst: time.Duration(res.CPUBurstUs) * time.Microsecond, Requests: load.Workload.Burst,
			Every: time.Duration(float64(load.Workload.Burst) / load.Workload.Rate * float64(time.Second)),
		}
		p := PredictBursts(s)
		measured := float64(out[pr.svc].ThrottledPeriods) / (float64(out[pr.load].Requests) / float64(load.Workload.Burst))
		v.Labels = append(v.Labels, svc.Name+": periods throttled per burst")
		v.Predicted = append(v.Predicted, p.ThrottledPerBurst)
		v.Measured = append(v.Measured, measured)
		lines = append(lines, fmt.Sprintf("%s (quota %s a %s period, burst %s, %d threads): %.2f periods throttled per burst of %d requests predicted, %.2f measured; the p99 of %s %.0f ms predicted, %.0f ms measured",
			svc.Name, s.Quota, s.Period, s.Burst, s.Threads, p.ThrottledPerBurst, s.Requests, measured,
			load.Name, float64(p.P99.Microseconds())/1e3, out[pr.load].P99Ms))
	}
	worst := 0.0
	for k, p := range v.Predicted {
		worst = max(worst, ratioDeviation(v.Measured[k], p))
	}
	v.Judged, v.Pass = true, worst <= spec.Tolerance
	v.Explanation = fmt.Sprintf("A burst of requests that needs more CPU at once than a period's quota is throttled once the period's runtime is spent, and its last requests wait for the next period; a CFS burst lets a period spend quota that earlier periods left unused. The model simulates CFS bandwidth control against the load's bursts at %s of CPU a request, the least the services spent as measured: %s. The farthest is %s off, tolerance %s (the p99 is not judged: it moves with when the requests reach the service and with the load's own CPU).",
		demand.Round(10*time.Microsecond), strings.Join(lines, "; "), specs.Percent(worst), specs.Percent(spec.Tolerance))
	return v
}
