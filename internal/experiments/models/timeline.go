package models

import "github.com/limitlab/limitlab/internal/experiments/specs"

// A run's shape before it runs, for a lab's page: where each lane lies on
// the run's time axis, and what the model expects of each lane in each
// phase between lanes starting and stopping.

// TimelineLane is one lane's place on the time axis, in seconds from the
// run's start. Open says its end is its work's: To is then the run's
// duration, the latest it can end.
type TimelineLane struct {
	Lane     int
	From, To float64
	Open     bool
}

// Timeline places a parallel plan's lanes on its time axis; nil for a
// sequential one, whose lanes take turns, each as long as its work.
func Timeline(plan specs.Plan) []TimelineLane {
	if plan.Mode == specs.Sequential {
		return nil
	}
	end := plan.Duration.Seconds()
	out := make([]TimelineLane, len(plan.Lanes))
	for i, l := range plan.Lanes {
		t := TimelineLane{Lane: i, From: l.StartAt.Seconds(), To: end, Open: true}
		if _, timeBound, ok := workUnits(l.Workload); ok && timeBound && l.Workload.Seconds > 0 {
			t.To, t.Open = min(end, t.From+l.Workload.Seconds), false
		}
		if l.StopAt > 0 && l.StopAt.Seconds() <= t.To {
			t.To, t.Open = l.StopAt.Seconds(), false
		}
		out[i] = t
	}
	return out
}

// PlannedPhase is one phase of a phased plan: the lanes that run in it
// and each one's expected CPU there, in cores (-1 where the model does
// not apply), in the order of Lanes.
type PlannedPhase struct {
	From, To float64
	Lanes    []int
	Cores    []float64
}

// PlannedPhases are a parallel plan's phases, between the instants lanes
// start and stop (PhaseBounds), each with the lanes that run in it and
// what the CPU allotment model expects of them there; nil for a plan
// without phases. A span in which no lane runs is not a phase.
func PlannedPhases(plan specs.Plan, h ModelHost) []PlannedPhase {
	bounds := plan.PhaseBounds()
	lanes := Timeline(plan)
	if len(bounds) == 0 || lanes == nil {
		return nil
	}
	end := 0.0
	for _, l := range lanes {
		end = max(end, l.To)
	}
	edges := []float64{0}
	for _, b := range bounds {
		if b > 0 && b < end {
			edges = append(edges, b)
		}
	}
	edges = append(edges, end)
	var out []PlannedPhase
	for k := 0; k+1 < len(edges); k++ {
		p := PlannedPhase{From: edges[k], To: edges[k+1]}
		mid := (p.From + p.To) / 2
		var demands []CPUDemand
		for _, l := range lanes {
			if l.From <= mid && mid < l.To {
				p.Lanes = append(p.Lanes, l.Lane)
				pl := plan.Lanes[l.Lane]
				demands = append(demands, DemandOn(pl.Workload, pl.Resources, h))
			}
		}
		if len(p.Lanes) == 0 {
			continue
		}
		p.Cores = Allot(demands, h.NCPU)
		for j, i := range p.Lanes {
			if !Modelled(plan.Lanes[i].Workload) {
				p.Cores[j] = -1
			}
		}
		out = append(out, p)
	}
	return out
}
