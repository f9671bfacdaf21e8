package workshop

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/docker/go-units"
	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// Limits bound what runs may ask of the host, like a Kubernetes
// ResourceQuota; zero is no limit. For a participant they count the
// participant's queued and running runs; for the host, the running runs.
type Limits struct {
	Runs       int     // runs (participants only: the host's is Options.MaxRunning)
	CPUs       float64 // CPUs the lanes may use in all: --cpus, quota/period, else the cpuset's size, else every CPU
	Memory     int64   // the lanes' --memory in all, in bytes
	Containers int     // lanes, each a container
}

// Quotas are the limits checked when a run is submitted.
type Quotas struct {
	Participant Limits
	Host        Limits
}

// DefaultQuotas allow each participant one queued or running run.
var DefaultQuotas = Quotas{Participant: Limits{Runs: 1}}

// ask is what a run asks of the host.
type ask struct {
	runs       int
	cpus       float64
	memory     int64
	containers int
}

func (a ask) plus(b ask) ask {
	return ask{a.runs + b.runs, a.cpus + b.cpus, a.memory + b.memory, a.containers + b.containers}
}

// askOf is what a plan's lanes may use on a host of ncpu CPUs, by their
// limits: a lane without a CPU limit may use every CPU it can run on.
func askOf(plan specs.Plan, ncpu int) ask {
	a := ask{runs: 1, containers: len(plan.Lanes)}
	for _, l := range plan.Lanes {
		r := l.Resources
		a.memory += r.Memory
		switch cpus := models.Demand(l.Workload, r).CPUs; {
		case r.CPULimit() > 0:
			a.cpus += r.CPULimit()
		case len(cpus) > 0:
			a.cpus += float64(len(cpus))
		default:
			a.cpus += float64(ncpu)
		}
	}
	return a
}

// withResources is plan with its lanes' limits replaced by res: a running
// run's plan as its live changes have made it.
func withResources(plan specs.Plan, res []specs.Resources) specs.Plan {
	p := plan
	p.Lanes = slices.Clone(plan.Lanes)
	for i := range p.Lanes {
		p.Lanes[i].Resources = res[i]
	}
	return p
}

// QuotaError is a submission refused by a limit: which one, and by how
// much.
type QuotaError struct {
	Scope string `json:"scope"` // "participant" or "host"
	Limit string `json:"limit"` // "runs", "cpus", "memory" or "containers"
	// Lane is the lane at fault when the limit needs something of every
	// lane (a memory limit, for a memory quota); -1 otherwise.
	Lane  int     `json:"lane"`
	Asked float64 `json:"asked"`
	InUse float64 `json:"in_use"`
	Max   float64 `json:"max"`
	Over  float64 `json:"over"`
	Text  string  `json:"message"`
}

func (e *QuotaError) Error() string { return e.Text }

func quotaAmount(limit string, v float64) string {
	switch limit {
	case "memory":
		return units.BytesSize(v)
	case "cpus":
		return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) + " CPUs"
	case "runs":
		return fmt.Sprintf("%g runs", v)
	}
	return fmt.Sprintf("%g containers", v)
}

// checkLimits refuses a run asking for a when used is already taken and
// lim is the limit; scope names whose limit it is in the message.
func checkLimits(scope string, plan specs.Plan, a, used ask, lim Limits) *QuotaError {
	whose := map[string]string{"participant": "your queued and running runs", "host": "the runs running now"}[scope]
	if lim.Memory > 0 {
		for i, l := range plan.Lanes {
			if l.Resources.Memory == 0 {
				return &QuotaError{Scope: scope, Limit: "memory", Lane: i, Max: float64(lim.Memory),
					Text: fmt.Sprintf("lane %d (%s): memory: the %s memory quota (%s) counts every lane's --memory, so each lane needs one",
						i, l.Name, scope, units.BytesSize(float64(lim.Memory)))}
			}
		}
	}
	checks := []struct {
		name              string
		asked, inUse, max float64
	}{
		{"runs", float64(a.runs), float64(used.runs), float64(lim.Runs)},
		{"cpus", a.cpus, used.cpus, lim.CPUs},
		{"memory", float64(a.memory), float64(used.memory), float64(lim.Memory)},
		{"containers", float64(a.containers), float64(used.containers), float64(lim.Containers)},
	}
	for _, c := range checks {
		if c.max <= 0 || c.asked+c.inUse <= c.max+1e-9 {
			continue
		}
		over := c.asked + c.inUse - c.max
		return &QuotaError{Scope: scope, Limit: c.name, Lane: -1, Asked: c.asked, InUse: c.inUse, Max: c.max, Over: over,
			Text: fmt.Sprintf("%s limit on %s exceeded by %s: this run asks for %s, %s take %s, the limit is %s",
				scope, c.name, quotaAmount(c.name, over), quotaAmount(c.name, c.asked), whose,
				quotaAmount(c.name, c.inUse), quotaAmount(c.name, c.max))}
	}
	return nil
}
