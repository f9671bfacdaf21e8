package runner

import (
	"fmt"
	"math"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// phasesLocked gives each lane its throughput and IOPS in every phase it
// ran in: the mean of its samples wholly inside the phase. A phase is
// measured as it really happened, since the engine may take seconds to
// start or stop containers on a busy host: from half a second after the
// last start or stop at its opening bound, to the first at its closing one
// or a second before the bound, when the next lanes are asked to start.
func (x *execution) phasesLocked() {
	r := x.r
	bounds := r.bounds
	if bounds == nil {
		return
	}
	end := time.Since(r.st.start).Seconds()
	// first and last are when the lanes that start or stop at bound b
	// really did.
	first, last := make([]float64, len(bounds)), make([]float64, len(bounds))
	for k, b := range bounds {
		first[k], last[k] = math.Inf(1), b
		for i, pl := range r.plan.Lanes {
			l := r.st.lanes[i]
			var at float64
			switch {
			case pl.StartAt.Seconds() == b && l.startedAt > 0:
				at = l.startedAt
			case pl.StopAt.Seconds() == b && l.endedAt > 0:
				at = l.endedAt
			default:
				continue
			}
			first[k], last[k] = min(first[k], at), max(last[k], at)
		}
		if math.IsInf(first[k], 1) {
			first[k] = b
		}
	}
	for _, l := range r.st.lanes {
		var phases []Phase
		for k := 0; k <= len(bounds); k++ {
			from, to := 0.0, end
			if k > 0 {
				from = last[k-1] + 0.5
			}
			if k < len(bounds) {
				to = min(first[k], bounds[k]-1)
			}
			var thr, iops, iops2, cores, n float64
			for _, s := range l.phased {
				if s.T-s.DT >= from && s.T <= to {
					thr, iops, iops2, cores, n = thr+s.Throughput, iops+s.WorkIOPS, iops2+s.WorkIOPS*s.WorkIOPS, cores+s.CPU, n+1
				}
			}
			if n == 0 {
				continue
			}
			p := Phase{
				Name:        fmt.Sprintf("phase %d", k+1),
				FromSeconds: from, ToSeconds: to, Throughput: thr / n, IOPS: iops / n, Cores: cores / n,
			}
			if mean := iops / n; n > 1 && mean > 0 {
				variance := max(0, (iops2-n*mean*mean)/(n-1))
				p.IOPSError = math.Sqrt(variance/n) / mean
			}
			phases = append(phases, p)
		}
		l.phases = phases
	}
}

// expect recomputes every running lane's expected cores from the lanes of
// plan running now and their limits, on host h: the prediction follows the
// run from each change on. Run.mu is held; the caller publishes the run.
func (s *runState) expect(plan specs.Plan, h models.ModelHost) {
	var running []*laneState
	var demands []models.CPUDemand
	for i, l := range s.lanes {
		l.expected = nil
		if l.state == LaneRunning && l.applied != nil {
			running = append(running, l)
			demands = append(demands, models.DemandOn(plan.Lanes[i].Workload, *l.applied, h))
		}
	}
	for k, c := range models.Allot(demands, h.NCPU) {
		running[k].expected = &c
	}
	for i, l := range s.lanes {
		if plan.Lanes[i].Workload.Kind == specs.KindMem {
			l.expected = nil
		}
	}
}

// judgeLocked puts the model's prediction beside each lane's measurement
// and, for a run that is done, gives the verdict.
func (x *execution) judgeLocked() {
	r := x.r
	lanes := r.st.lanes
	out := make([]models.LaneOutcome, len(lanes))
	for i, l := range lanes {
		out[i] = models.LaneOutcome{Start: l.startedAt, Wall: l.wall, CPUSeconds: l.user + l.sys,
			Completed: l.completed, Applied: l.atStart}
	}
	// The window in which every lane of a parallel run was running.
	from, to := 0.0, math.Inf(1)
	for _, l := range lanes {
		from, to = max(from, l.startedAt), min(to, l.endedAt)
	}
	if r.plan.Mode == specs.Parallel {
		for i := range out {
			out[i].WindowCores = models.WindowMean(lanes[i].samples, from, to)
		}
	}
	var changes []models.Change
	for _, c := range r.st.changes {
		changes = append(changes, models.Change{At: c.AtSeconds, Lane: c.Lane, Applied: c.Applied})
	}
	host := r.env.Host.ModelHost()
	pred := models.Predict(r.plan, host, out, changes)
	for i, p := range pred.Lanes {
		if p.OK {
			cores, wall := p.Cores, p.Wall
			lanes[i].predictedCores, lanes[i].predictedWall = &cores, &wall
		}
	}
	spec := models.JudgedBy(r.plan)
	if spec == nil || r.st.state != StateDone {
		return
	}
	if v, blocked := unjudgeable(*spec, r.env.Host.Samples); blocked {
		r.st.verdict = &v
		return
	}
	var v models.Verdict
	// The rows the verdict judges, with the lanes in each and the host's
	// load there: read once, for the phases' prediction and the noise.
	var judgedRows []models.NoisyRow
	rows := func() []models.NoisyRow {
		if judgedRows == nil {
			judgedRows = x.noiseRowsLocked(spec.Metric, from, to)
		}
		return judgedRows
	}
	switch spec.Metric {
	case specs.MetricIOLimit, specs.MetricPhaseRecovery, specs.MetricIOShare:
		v = models.JudgeIO(*spec, r.plan, ioOutcomesLocked(r, spec.Metric, rows), r.env.Host.Queue)
	case specs.MetricThrottling:
		v = models.JudgeThrottling(*spec, r.plan, throttleOutcomesLocked(r), host.NCPU)
	case specs.MetricBurst:
		v = models.JudgeBurst(*spec, r.plan, burstOutcomesLocked(r), host.NCPU)
	case specs.MetricRuntimes:
		v, v.Runtimes = models.JudgeRuntimes(*spec, r.plan, runtimeLanesLocked(r),
			models.RuntimeHost{NCPU: host.NCPU, MemTotal: r.env.Host.MemTotal, CgroupV2: host.CgroupV2})
	default:
		v = models.Judge(*spec, r.plan, pred, out)
	}
	// What a runtime believes it has does not depend on the host's load.
	if x.load != nil && spec.Metric != specs.MetricRuntimes {
		v = models.JudgeNoise(v, host.NCPU, rows())
	}
	if why := spec.ToleranceWhy; why != "" && v.Judged {
		v.Explanation += " The lab's tolerance: " + why
	}
	r.st.verdict = &v
}

// ioOutcomesLocked are the lanes' block IO, and a CPU victim's rates by
// phase, for a verdict of metric; rows are the rows it judges. r.mu is
// held.
func ioOutcomesLocked(r *Run, metric string, rows func() []models.NoisyRow) []models.IOOutcome {
	lanes := r.st.lanes
	io := make([]models.IOOutcome, len(lanes))
	var contended []float64
	if r.plan.Mode == specs.Parallel {
		series := make([][]models.CoreSample, len(lanes))
		for i, l := range lanes {
			series[i] = l.samples
		}
		contended = models.ContendedIO(series, r.interval.Seconds()/2)
	}
	for i, l := range lanes {
		io[i] = models.IOOutcome{Completed: l.completed, Throughput: l.throughput, IOPS: l.iops}
		if contended != nil {
			io[i].WindowBps = contended[i]
		}
		// A disk lane's phases compare IOPS, any other its CPU: its
		// work per CPU second moves with the host's physical cores
		// (1100 to 2300 loops a second at 1.00 core, measured in one
		// run of a spin lane alone on the project's machine).
		io[i].PhaseCores = !r.plan.Lanes[i].Workload.Disk()
		for _, p := range l.phases {
			rate := p.Cores
			if !io[i].PhaseCores {
				rate = p.IOPS
			}
			io[i].PhaseRates = append(io[i].PhaseRates, rate)
			io[i].PhaseErrors = append(io[i].PhaseErrors, p.IOPSError)
			io[i].PhaseWork = append(io[i].PhaseWork, p.Throughput)
		}
	}
	if metric == specs.MetricPhaseRecovery && len(io) > 0 && !io[0].PhaseCores && len(r.st.changes) == 0 {
		io[0].PhaseDisk = diskLoadsLocked(r)
	}
	if metric == specs.MetricPhaseRecovery && len(io) > 0 && io[0].PhaseCores && len(r.st.changes) == 0 {
		// The victim's CPU in each phase, as the model allots it
		// among the lanes then running (a live change would move
		// their limits within a phase: then it is not predicted).
		io[0].PhasePredicted = models.PhaseShares(rows(), r.env.Host.ModelHost().NCPU)
	}
	return io
}

// diskLoadsLocked is, for each of the first lane's phases, the block IO
// of every disk lane measured in it: their operations per second together
// and the requests they keep in flight. r.mu is held.
func diskLoadsLocked(r *Run) []models.DiskLoad {
	lanes := r.st.lanes
	loads := make([]models.DiskLoad, len(lanes[0].phases))
	for k, p := range lanes[0].phases {
		var perDepth []float64
		for i, l := range lanes {
			pl := r.plan.Lanes[i]
			if !pl.Workload.Disk() {
				continue
			}
			for _, q := range l.phases {
				if q.Name != p.Name {
					continue
				}
				loads[k].IOPS += q.IOPS
				loads[k].Depth += pl.Workload.Depth
				if i > 0 && pl.Workload.Depth > 0 { // the readers beside the victim
					perDepth = append(perDepth, q.IOPS/float64(pl.Workload.Depth))
				}
				limit, _ := models.IOLimit(pl, r.env.Host.Queue)
				loads[k].Held = loads[k].Held || limit > 0 || pl.Resources.BlkioWeight > 0 || pl.Resources.BlkioWeightDevice.Path != ""
			}
		}
		loads[k].Spread = models.ShareSpread(perDepth)
	}
	return loads
}

// throttleOutcomesLocked is what CFS counted of each lane. r.mu is held.
func throttleOutcomesLocked(r *Run) []models.ThrottleOutcome {
	lanes := r.st.lanes
	th := make([]models.ThrottleOutcome, len(lanes))
	for i, l := range lanes {
		th[i] = models.ThrottleOutcome{Completed: l.exitCode != nil && *l.exitCode == 0 && !l.timedOut,
			Periods: l.totals.Periods, Throttled: l.totals.ThrottledPeriods, ThrottledNs: l.totals.ThrottledNs, Wall: l.wall}
	}
	// A service is throttled while it is loaded: its time is its
	// load's, not its own, which includes waiting for the load to
	// start (a second or more for a pod) and to stop.
	for j, pl := range r.plan.Lanes {
		if t := pl.Target; t >= 0 && lanes[j].wall > 0 && lanes[j].wall < th[t].Wall {
			th[t].Wall = lanes[j].wall
		}
	}
	// What else used the CPUs while a service was loaded: its loads' own
	// CPU and the host's other work over the loads' time.
	for j, pl := range r.plan.Lanes {
		t := pl.Target
		if t < 0 || th[t].Wall <= 0 || lanes[j].wall <= 0 {
			continue
		}
		th[t].Beside += float64(lanes[j].totals.CPUNs) / 1e9 / th[t].Wall
		foreign, steal := meanLoad(r.st.host, lanes[j].startedAt, lanes[j].endedAt)
		th[t].Foreign = max(th[t].Foreign, foreign+steal)
	}
	return th
}

// burstOutcomesLocked is what each lane measured for a verdict of bursts:
// a service's throttled periods, a load's requests and p99. r.mu is held.
func burstOutcomesLocked(r *Run) []models.BurstOutcome {
	out := make([]models.BurstOutcome, len(r.st.lanes))
	for i, l := range r.st.lanes {
		out[i] = models.BurstOutcome{Completed: l.exitCode != nil && *l.exitCode == 0 && !l.timedOut,
			ThrottledPeriods: l.totals.ThrottledPeriods, CPUSeconds: l.user + l.sys}
		if s := l.summary; s != nil {
			out[i].Requests = int64(s.Done)
			if s.Latency != nil {
				out[i].P99Ms = s.Latency.P99
			}
		}
	}
	return out
}

// noiseRowsLocked are the rows a verdict of metric judges, each with the
// lanes that ran in its window and the host's load there: for lanes that
// ran together, each lane in the window every lane ran in (from, to); for
// lanes one after another, each alone in its own time; for phases, the
// first lane in each of its phases beside the lanes running then. r.mu is
// held.
func (x *execution) noiseRowsLocked(metric string, from, to float64) []models.NoisyRow {
	r := x.r
	h := r.env.Host.ModelHost()
	lanes := r.st.lanes
	demand := func(i int) models.CPUDemand {
		return models.DemandOn(r.plan.Lanes[i].Workload, lanes[i].atStart, h)
	}
	row := func(name string, in []int, lane int, from, to float64) models.NoisyRow {
		nr := models.NoisyRow{Name: name}
		for _, i := range in {
			if i == lane {
				nr.Lane = len(nr.Lanes)
			}
			nr.Lanes = append(nr.Lanes, demand(i))
		}
		nr.Foreign, nr.Steal = meanLoad(r.st.host, from, to)
		return nr
	}
	var rows []models.NoisyRow
	switch {
	case metric == specs.MetricPhaseRecovery && len(lanes) > 0:
		for _, p := range lanes[0].phases {
			mid := (p.FromSeconds + p.ToSeconds) / 2
			var in []int
			for i, l := range lanes {
				if l.startedAt <= mid && (l.endedAt == 0 || l.endedAt >= mid) {
					in = append(in, i)
				}
			}
			rows = append(rows, row(p.Name, in, 0, p.FromSeconds, p.ToSeconds))
		}
	case r.plan.Mode == specs.Parallel:
		all := make([]int, len(lanes))
		for i := range all {
			all[i] = i
		}
		for i := range lanes {
			rows = append(rows, row("the window every lane ran in", all, i, from, to))
		}
	default:
		for i, l := range lanes {
			rows = append(rows, row(r.plan.Lanes[i].Name+"'s run", []int{i}, i, l.startedAt, l.endedAt))
		}
	}
	return rows
}

// unjudgeable is the verdict of a run whose samples lack a signal its
// metric needs: not judged, saying which and why, rather than judged on
// what is not there.
func unjudgeable(spec specs.VerdictSpec, s engine.Sampling) (models.Verdict, bool) {
	if need, why, lacks := s.LacksAny(spec.Needs()); lacks {
		return models.Verdict{Metric: spec.Metric, Tolerance: spec.Tolerance,
			Explanation: fmt.Sprintf("not judged: this verdict compares %s, which samples on this host lack (%s)", need, why)}, true
	}
	return models.Verdict{}, false
}
