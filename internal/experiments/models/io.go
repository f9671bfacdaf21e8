package models

import (
	"fmt"
	"math"

	"github.com/limitlab/limitlab/internal/experiments/specs"
	"gonum.org/v1/gonum/stat"
)

// QueueLimits are the limits of a disk's request queue that decide how the
// kernel splits an IO (/sys/block/<dev>/queue/max_sectors_kb and
// max_segments). Zero is unknown.
type QueueLimits struct {
	MaxSectorsKB int `json:"max_sectors_kb,omitempty"`
	MaxSegments  int `json:"max_segments,omitempty"`
}

// bioMaxBytes is the most one bio carries from a user buffer: BIO_MAX_VECS
// (256) pages of 4 KiB.
const bioMaxBytes = 256 * 4096

// RequestsPerOp is how many IOs an IOPS throttle counts for one direct
// read or write of bs bytes: the kernel builds bios of at most 1 MiB and
// splits each at the queue's max_sectors_kb. (max_segments can split a bio
// further when its pages are scattered, but adjacent pages merge into one
// segment, so this host's figures show no such split; the model leaves it
// out.) On the write-up's disk, with max_sectors_kb 512, a 1 MiB write was
// two requests: its 5 IOPS gave 2.5 MB/s.
func RequestsPerOp(bs int, q QueueLimits) float64 {
	if bs <= 0 {
		return 1
	}
	req := bioMaxBytes
	if q.MaxSectorsKB > 0 {
		req = min(req, q.MaxSectorsKB<<10)
	}
	return math.Ceil(float64(bs) / float64(req))
}

// IOLimit is the rate a lane's throttle allows its workload, in the
// workload's own terms: MiB/s for a bandwidth limit, operations per second
// for an IOPS limit (requests per second over requests per operation).
// Zero when the lane has no throttle that its workload meets.
func IOLimit(l specs.PlannedLane, q QueueLimits) (rate float64, unit string) {
	r, w := l.Resources, l.Workload
	var bps, iops specs.DeviceRate
	switch w.Kind {
	case specs.KindDiskWrite:
		bps, iops = r.WriteBps, r.WriteIOps
	case specs.KindDiskRead:
		bps, iops = r.ReadBps, r.ReadIOps
	default:
		return 0, ""
	}
	if bps.Rate > 0 {
		return float64(bps.Rate) / (1 << 20), "MiB/s"
	}
	if iops.Rate > 0 {
		return float64(iops.Rate) / RequestsPerOp(int(w.BS), q), "ops/s"
	}
	return 0, ""
}

// IOOutcome is what was measured of a disk lane.
type IOOutcome struct {
	Completed  bool
	Throughput float64   // MiB/s
	IOPS       float64   // the workload's operations per second
	PhaseRates []float64 // the lane's rate in each phase of the run (0 where it did not run)
	// PhaseErrors are the standard errors of a disk workload's phase
	// rates, relative to them, from the spread of its samples.
	PhaseErrors []float64
	// PhaseCores says the rates are CPU in cores, as the lane's cgroup
	// counts it (a CPU workload); otherwise they are IOPS.
	PhaseCores bool
	// PhaseWork is a CPU workload's own throughput in each phase, which
	// the explanation gives beside its CPU.
	PhaseWork []float64
	// PhaseDisk is, for a disk workload in each of its phases, what every
	// disk lane running then did together: how the model shares the
	// device among them.
	PhaseDisk []DiskLoad
	// PhasePredicted is a CPU workload's CPU in each phase relative to
	// its first, as the model allots the CPUs among the lanes running then
	// (PhaseShares); nil where it is not predicted.
	PhasePredicted []float64
	// WindowBps is the lane's block IO, bytes per second as its cgroup
	// counts them, while every lane of a parallel run did block IO
	// (ContendedIO).
	WindowBps float64
}

// DiskLoad is the block IO of the disk lanes running in one phase: their
// operations per second together, and the requests they keep in flight
// (the sum of their depths).
type DiskLoad struct {
	IOPS  float64
	Depth int
	// Held says some lane then had a block IO throttle or weight: the
	// device is not shared by requests in flight alone.
	Held bool
	// Spread is how unequally the device served the lanes then: the
	// standard deviation of their operations per request in flight,
	// relative to the mean (0 with fewer than two lanes). Equal readers
	// beside the victim that got unequal parts show how far its own part
	// may stray from its share by chance.
	Spread float64
}

// ShareSpread is the relative standard deviation of rates (each lane's
// operations per second over its depth): 0 for fewer than two.
func ShareSpread(perDepth []float64) float64 {
	if len(perDepth) < 2 {
		return 0
	}
	mean, sd := stat.MeanStdDev(perDepth, nil)
	if mean <= 0 {
		return 0
	}
	return sd / mean
}

// DiskShare is a disk lane's predicted operations per second in a phase,
// relative to rate: on a device that does not weigh its cgroups (no BFQ
// weights, no throttles among the lanes then), readers that keep requests
// in flight are served in turn, and each gets the device's operations in
// proportion to the requests it keeps there. The device's capacity with
// every lane's requests in flight is not what one lane got alone (a disk
// serves deeper queues faster), so the phase's own total is what is
// shared. 0 where the phase has no such figure.
func DiskShare(load DiskLoad, depth int, rate float64) float64 {
	if load.Held || load.Depth <= 0 || load.IOPS <= 0 || rate <= 0 {
		return 0
	}
	return load.IOPS * float64(depth) / float64(load.Depth) / rate
}

// ioWeight is a lane's block IO weight: --blkio-weight, or its
// --blkio-weight-device; BFQ's default (100) where it has neither.
func ioWeight(r specs.Resources) float64 {
	switch {
	case r.BlkioWeightDevice.Path != "":
		return float64(r.BlkioWeightDevice.Rate)
	case r.BlkioWeight > 0:
		return float64(r.BlkioWeight)
	}
	return 100
}

// JudgeIO gives a block IO lab's verdict.
func JudgeIO(spec specs.VerdictSpec, plan specs.Plan, out []IOOutcome, q QueueLimits) Verdict {
	v := Verdict{Metric: spec.Metric, Tolerance: spec.Tolerance}
	switch spec.Metric {
	case specs.MetricIOLimit:
		for i, l := range plan.Lanes {
			limit, unit := IOLimit(l, q)
			if limit == 0 {
				continue
			}
			if !out[i].Completed {
				v.Explanation = fmt.Sprintf("Not judged: lane %d (%s) did not run to its end.", i+1, l.Name)
				return v
			}
			measured := out[i].Throughput
			if unit == "ops/s" {
				measured = out[i].IOPS
			}
			v.Labels = append(v.Labels, fmt.Sprintf("%s (%s)", l.Name, unit))
			v.Predicted = append(v.Predicted, limit)
			v.Measured = append(v.Measured, measured)
		}
		if len(v.Predicted) == 0 {
			v.Explanation = "Not judged: no lane has a throttle its workload meets."
			return v
		}
		worst := v.judgeRelative()
		v.Explanation = fmt.Sprintf("Each throttled lane should run at its limit; an IOPS limit counts block requests, and the kernel makes bios of at most 1 MiB and splits them into requests of at most %s: predicted %s, measured %s; the farthest is %s off, tolerance %s.",
			requestText(q), ratios(v.Predicted), ratios(v.Measured), specs.Percent(worst), specs.Percent(spec.Tolerance))
	case specs.MetricPhaseRecovery:
		rates := out[0].PhaseRates
		if len(rates) < 3 || rates[0] <= 0 {
			v.Explanation = "Not judged: the victim (lane 1) lacks a throughput in each of three phases."
			return v
		}
		first, mid, last := rates[0], rates[1], rates[2]
		v.Labels = []string{"alone", "beside the neighbours", "beside throttled neighbours"}
		// The middle phase is predicted for CPU from the lanes then
		// running, and for a disk from the device's operations then,
		// shared by the requests each lane keeps in flight.
		v.Predicted = []float64{1, 0, 1}
		if pp := out[0].PhasePredicted; out[0].PhaseCores && len(pp) >= 3 {
			v.Predicted = []float64{1, pp[1], pp[2]}
		}
		if d := out[0].PhaseDisk; !out[0].PhaseCores && len(d) >= 2 {
			v.Predicted[1] = DiskShare(d[1], plan.Lanes[0].Workload.Depth, first)
		}
		v.Measured = []float64{1, mid / first, last / first}
		devLast := ratioDeviation(last/first, v.Predicted[2])
		devMid := 0.0
		if v.Predicted[1] > 0 {
			devMid = ratioDeviation(mid/first, v.Predicted[1])
		}
		dev := max(devLast, devMid)
		v.Judged, v.Pass = true, dev <= spec.Tolerance
		if !out[0].PhaseCores {
			v.Explanation = diskRecoveryText(v, out[0].PhaseDisk, plan.Lanes[0].Workload.Depth, dev, spec.Tolerance)
			row := 2
			if devMid > devLast {
				row = 1
			}
			spread := 0.0
			if d := out[0].PhaseDisk; row == 1 && len(d) > 1 {
				spread = d[1].Spread
			}
			judgeDiskNoise(&v, out[0].PhaseErrors, row, spread, dev, spec.Tolerance)
			break
		}
		if v.Predicted[1] > 0 {
			v.Explanation = fmt.Sprintf("The victim's CPU, in cores as its cgroup counts it, relative to its first phase: %.2f beside unthrottled neighbours, %.2f once they are throttled. The CPU allotment model, from the runnable threads, weights and quotas of the lanes running in each phase, predicts %.2f and %.2f; the farthest is %s off, tolerance %s.",
				mid/first, last/first, v.Predicted[1], v.Predicted[2], specs.Percent(dev), specs.Percent(spec.Tolerance))
		} else {
			v.Explanation = fmt.Sprintf("The victim's CPU, in cores as its cgroup counts it, relative to its first phase: %.2f beside unthrottled neighbours, %.2f once they are throttled; recovery should bring it within %s of 1 (it is %s off).",
				mid/first, last/first, specs.Percent(spec.Tolerance), specs.Percent(dev))
		}
		if w := out[0].PhaseWork; len(w) >= 3 && w[0] > 0 {
			v.Explanation += fmt.Sprintf(" Its own throughput went %.2f and %.2f of its first phase: work per CPU second moves with what else the host's physical cores run, which a shared machine does not show, so the CPU it got is what is judged.",
				w[1]/w[0], w[2]/w[0])
		}
	case specs.MetricIOShare:
		for i, l := range plan.Lanes {
			if out[i].WindowBps <= 0 {
				v.Explanation = fmt.Sprintf("Not judged: lane %d (%s) did no block IO while every lane ran.", i+1, l.Name)
				return v
			}
			v.Labels = append(v.Labels, l.Name)
			v.Predicted = append(v.Predicted, ioWeight(l.Resources)/ioWeight(plan.Lanes[0].Resources))
			v.Measured = append(v.Measured, out[i].WindowBps/out[0].WindowBps)
		}
		worst := v.judgeRelative()
		v.Explanation = fmt.Sprintf("While every lane runs, each should get the disk in proportion to its weight: predicted %s, measured %s (bytes per second as the cgroups count them); the farthest is %s off, tolerance %s.",
			ratios(v.Predicted), ratios(v.Measured), specs.Percent(worst), specs.Percent(spec.Tolerance))
	default:
		v.Explanation = "Not judged: unknown metric " + spec.Metric
	}
	return v
}

// diskRecoveryText explains a disk victim's recovery verdict v, whose
// middle phase is predicted from load (0 where it is not).
func diskRecoveryText(v Verdict, load []DiskLoad, depth int, dev, tolerance float64) string {
	m := v.Measured
	if v.Predicted[1] <= 0 {
		why := "the disk lanes' operations there were not measured"
		if len(load) > 1 && load[1].Held {
			why = "a lane then had a block IO throttle or weight, and the model shares a device by requests in flight alone"
		}
		return fmt.Sprintf("The victim's IOPS relative to its first phase: %.2f beside unthrottled neighbours, %.2f once they are throttled; recovery should bring it within %s of 1 (it is %s off). The middle phase is not predicted: %s.",
			m[1], m[2], specs.Percent(tolerance), specs.Percent(dev), why)
	}
	return fmt.Sprintf("The victim's IOPS relative to its first phase: %.2f beside unthrottled neighbours, %.2f once they are throttled. Beside them, the disk lanes together did %.0f operations a second with %d requests in flight, against the victim's %.0f alone with %d: a disk serves a deeper queue faster, so what one lane got alone is not the device's capacity. On a device that does not weigh its cgroups each lane gets its part of the operations by the requests it keeps in flight, so the victim should get %d/%d of them, %.2f of its rate alone, and recover to 1 once its neighbours are throttled; the farthest is %s off, tolerance %s.",
		m[1], m[2], load[1].IOPS, load[1].Depth, load[0].IOPS, load[0].Depth, depth, load[1].Depth, v.Predicted[1], specs.Percent(dev), specs.Percent(tolerance))
}

func requestText(q QueueLimits) string {
	if q.MaxSectorsKB > 0 {
		return fmt.Sprintf("%d KiB (max_sectors_kb)", q.MaxSectorsKB)
	}
	return "what the disk allows (its queue limits are not visible here)"
}

// judgeRelative judges a verdict whose rows are predicted and measured
// values: it passes when each measurement is within the tolerance of its
// prediction, relatively. It returns the farthest deviation.
func (v *Verdict) judgeRelative() float64 {
	v.Judged, v.Pass = true, true
	worst := 0.0
	for k := range v.Predicted {
		dev := math.Abs(v.Measured[k]/v.Predicted[k] - 1)
		worst = max(worst, dev)
		v.Pass = v.Pass && dev <= v.Tolerance
	}
	return worst
}

// judgeDiskNoise makes a failed recovery verdict inconclusive where the
// disk's own noise could have decided it: the ratio of row's IOPS (the
// farthest from its prediction) to the first phase's has a standard error
// from the spread of each phase's samples (errs, relative), and for the
// middle phase also from how unequally the device served the lanes then
// (spread, relative); a deviation within two of them of the tolerance is
// not told apart from the noise. It says how noisy the disk was.
func judgeDiskNoise(v *Verdict, errs []float64, row int, spread, dev, tolerance float64) {
	if v.Pass || len(errs) < 3 {
		return
	}
	se := math.Sqrt(errs[0]*errs[0] + errs[row]*errs[row] + spread*spread)
	if dev-2*se > tolerance {
		return
	}
	v.Inconclusive, v.Pass = true, false
	why := fmt.Sprintf("the victim's IOPS alone, and %s, moved from sample to sample", v.Labels[row])
	if spread > 0 {
		why = fmt.Sprintf("the victim's IOPS moved from sample to sample, and the device served the equal readers beside it unequally (their operations per request in flight spread by %s)", specs.Percent(spread))
	}
	v.Noise = fmt.Sprintf("the disk was too noisy to judge: %s, enough that the ratio has a standard error of %s; %s off is within two of them of the tolerance of %s",
		why, specs.Percent(se), specs.Percent(dev), specs.Percent(tolerance))
	v.Explanation = "inconclusive: " + v.Noise + ". What was measured: " + v.Explanation
}
