package runner

import (
	"fmt"

	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/workload/wire"
)

// changeSettles is how long after a live change a round must begin for
// the runtimes it asks to be judged against the new limits: a running Go
// program checks its quota and CPUs about once a second.
const changeSettles = 1.5

// keepRuntimes keeps a runtimes lane's rounds from its summary once they
// pass the same checks the workload made (a container's output reaches no
// page unchecked); a lane of another kind keeps none. r.mu is held.
func (l *laneState) keepRuntimes(kind string, rounds []wire.RuntimeRound) {
	if kind != specs.KindRuntimes || len(rounds) == 0 {
		return
	}
	if err := wire.CheckRuntimeRounds(rounds); err != nil {
		if l.err == "" {
			l.err = "its runtimes' reports were refused: " + err.Error()
		}
		return
	}
	l.runtimes = rounds
}

// runtimeLanesLocked are the runtimes lanes' last rounds, each with the
// limits in force when it began. A round that began less than
// changeSettles after a live change of its lane, or before a change that
// came while it ran, is not judged. r.mu is held.
func runtimeLanesLocked(r *Run) []models.RuntimeLane {
	out := make([]models.RuntimeLane, len(r.st.lanes))
	for i, l := range r.st.lanes {
		if len(l.runtimes) == 0 {
			out[i].Why = "no round of reports"
			if l.err != "" {
				out[i].Why += ": " + l.err
			}
			continue
		}
		last := l.runtimes[len(l.runtimes)-1]
		began := l.startedAt + last.AtS
		limits := l.atStart
		for _, c := range r.st.changes {
			if c.Lane != i {
				continue
			}
			if c.AtSeconds > began-changeSettles {
				out[i].Why = fmt.Sprintf("its last round began at %.1f s, too close to its live change at %.1f s to say which limits it saw", began, c.AtSeconds)
				break
			}
			limits = c.Applied
		}
		out[i].Reports, out[i].Limits = last.Reports, limits
	}
	return out
}
