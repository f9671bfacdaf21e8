package runner

import (
	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// LaneCounters is a running lane's last reading of its cgroup's
// cumulative counters, as the metrics give them: the run and its lab, the
// lane, its container's name on the engine, and the limits applied.
type LaneCounters struct {
	Run, Lab       string
	Lane           int
	Name           string // the lane's name in the spec
	Container      string // the container's or pod's name on the engine
	Counters       engine.Counters
	CPUQuotaUs     int64 // the CFS quota applied, 0: none
	CPUPeriodUs    int64
	CPUShares      int64
	MemoryLimitSet int64 // --memory as applied, 0: none
}

// defaultCFSPeriodUs is the CFS period the kernel and Docker use unless
// told.
const defaultCFSPeriodUs = 100_000

// CountersOf are the counters of r's lanes that run and have been read at
// least once, taken under the run's lock: no engine is asked, so that a
// metrics scrape costs what copying them does.
func CountersOf(r *Run) []LaneCounters {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.st.state != StateRunning {
		return nil
	}
	var out []LaneCounters
	for i, l := range r.st.lanes {
		if l.state != LaneRunning || !l.hasPrev {
			continue
		}
		c := LaneCounters{Run: r.id, Lab: r.plan.Lab, Lane: i, Name: r.plan.Lanes[i].Name,
			Container: engine.ContainerName(r.id, i), Counters: l.prev}
		if a := l.applied; a != nil {
			c.CPUQuotaUs, c.CPUPeriodUs = cfsQuota(*a)
			c.CPUShares, c.MemoryLimitSet = a.CPUShares, a.Memory
		}
		out = append(out, c)
	}
	return out
}

// cfsQuota is the CFS quota and period a lane's limits ask for: --cpus
// over the default period, or --cpu-quota over its --cpu-period.
func cfsQuota(r specs.Resources) (quotaUs, periodUs int64) {
	periodUs = r.CPUPeriod
	if periodUs == 0 {
		periodUs = defaultCFSPeriodUs
	}
	switch {
	case r.NanoCPUs > 0:
		return r.NanoCPUs * periodUs / 1e9, periodUs
	case r.CPUQuota > 0:
		return r.CPUQuota, periodUs
	}
	return 0, periodUs
}

// StateOf is r's state now.
func StateOf(r *Run) State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st.state
}
