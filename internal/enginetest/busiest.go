package enginetest

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
)

// Busiest names the host's busiest processes over d, with the share of a
// CPU each used: what a spoiled measurement is logged with, so that a
// busy host is seen for what it was busy with.
func Busiest(d time.Duration, n int) string {
	before := procTimes()
	time.Sleep(d)
	after := procTimes()
	type use struct {
		name string
		cpu  float64
	}
	var uses []use
	for pid, a := range after {
		b, ok := before[pid]
		if !ok || a.ns < b.ns {
			continue
		}
		uses = append(uses, use{fmt.Sprintf("%s (%d)", a.comm, pid), float64(a.ns-b.ns) / 1e9 / d.Seconds()})
	}
	sort.Slice(uses, func(i, j int) bool { return uses[i].cpu > uses[j].cpu })
	var parts []string
	for _, u := range uses[:min(n, len(uses))] {
		if u.cpu >= 0.01 {
			parts = append(parts, fmt.Sprintf("%s %.2f", u.name, u.cpu))
		}
	}
	if len(parts) == 0 {
		return "no process used a hundredth of a CPU"
	}
	return strings.Join(parts, ", ")
}

type procTime struct {
	comm string
	ns   uint64
}

// procTimes reads every process's name and CPU time (user and system).
func procTimes() map[int]procTime {
	out := map[int]procTime{}
	engine.Processes(func(pid int, comm string, ns uint64) { out[pid] = procTime{comm, ns} })
	return out
}
