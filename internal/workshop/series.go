package workshop

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
)

// newSeries makes the later runs of a series led by first: the same spec,
// every other one in the reverse order where the lanes run one after
// another. Each joins the queue when the run before it ends, so that a
// series takes turns with the other participants' runs while every run
// still has the host to itself.
func newSeries(env *runner.Env, first *entry, spec specs.Spec, plan specs.Plan) []*entry {
	ids := []string{first.run.ID()}
	var rest []*entry
	for k := 1; k < plan.Repeat; k++ {
		e := &entry{run: runner.New(env, newID(), first.run.Participant(), spec, models.RoundPlan(plan, k)), spec: spec, address: first.address, ask: first.ask, follows: true, round: k}
		if first.fits != nil {
			e.fits = map[string]fit{}
		}
		ids = append(ids, e.run.ID())
		rest = append(rest, e)
	}
	first.run.InSeries(runner.Series{ID: ids[0], Index: 0, Runs: ids})
	for k, e := range rest {
		e.run.InSeries(runner.Series{ID: ids[0], Index: k + 1, Runs: ids})
	}
	return rest
}

// nextInSeries is the run of e's series to queue now that e has ended:
// the next that has not ended, if e ran to its end. A series whose run
// failed or was stopped ends there: its later runs end as stopped.
func (m *Manager) nextInSeries(e *entry) *entry {
	if len(e.rest) == 0 {
		return nil
	}
	v := e.run.View()
	if v.State != runner.StateDone {
		m.endSeries(e.rest, fmt.Sprintf("run %d of its series ended %s, so the later ones did not start", v.Series.Index+1, v.State))
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, next := range e.rest {
		if !next.follows { // stopped while it waited
			continue
		}
		next.follows = false
		next.rest = e.rest[i+1:]
		return next
	}
	return nil
}

// endSeries ends a series' later runs that are not queued yet. Whoever
// clears a run's follows under m.mu owns it (this, a Stop, or the series
// queueing it), so that no run is ended twice.
func (m *Manager) endSeries(rest []*entry, why string) {
	for _, e := range rest {
		m.mu.Lock()
		mine := e.follows
		e.follows = false
		m.mu.Unlock()
		if mine {
			e.run.EndQueued(runner.StateStopped, why)
			m.forget(e)
		}
	}
}

// SeriesView is what a series' runs measured, lane by lane, and whether
// the lanes differ beyond the noise between the runs.
type SeriesView struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Lab  string `json:"lab,omitempty"`
	// Runs are the series' runs in order, as they are now.
	Runs []SeriesRun `json:"runs"`
	// Quantity is what is compared: each lane's wall time where the lanes
	// run one after another, its CPU in cores where they run together.
	Quantity string `json:"quantity"`
	Unit     string `json:"unit"`
	Done     int    `json:"done"` // runs that ran to their end
	// Noisy are the runs that ran to their end but whose verdicts the
	// host's own load could have decided: they are left out of the lanes'
	// figures and the verdict while a quiet run is left to count.
	Noisy       int                 `json:"noisy"`
	Lanes       []models.SeriesLane `json:"lanes"`
	Comparisons []models.Comparison `json:"comparisons"`
	// Verdict is the lab's, over the runs' measurements.
	Verdict *models.Verdict `json:"verdict,omitempty"`
}

// SeriesRun is one run of a series.
type SeriesRun struct {
	ID    string       `json:"id"`
	State runner.State `json:"state"`
	Order []string     `json:"order"` // the lanes in the order they ran
	// Noise says what was busy on the host, for a run whose verdict was
	// inconclusive; empty for a quiet one.
	Noise string `json:"noise,omitempty"`
}

// Series is the series with the given id, as its runs are now.
func (a *Archive) Series(id string) (SeriesView, bool) {
	first, ok := a.View(id)
	if !ok || first.Series == nil || first.Series.ID != id {
		return SeriesView{}, false
	}
	sv := SeriesView{ID: id, Name: first.Name, Lab: first.Lab, Quantity: "CPU", Unit: "cores"}
	if first.Mode == specs.Sequential {
		sv.Quantity, sv.Unit = "wall time", "s"
	}
	for _, l := range first.Lanes {
		sv.Lanes = append(sv.Lanes, models.SeriesLane{Name: l.Name})
	}
	var verdicts []*models.Verdict
	type done struct {
		v     runner.RunView
		noisy bool
	}
	var ended []done
	for _, rid := range first.Series.Runs {
		v, ok := a.View(rid)
		if !ok {
			continue
		}
		run := SeriesRun{ID: rid, State: v.State, Order: laneOrder(v)}
		noisy := v.Verdict != nil && v.Verdict.Inconclusive
		if noisy {
			run.Noise = cmp.Or(v.Verdict.Noise, "the host was too busy to judge")
		}
		sv.Runs = append(sv.Runs, run)
		if v.State != runner.StateDone || len(v.Lanes) != len(sv.Lanes) {
			continue
		}
		sv.Done++
		verdicts = append(verdicts, v.Verdict)
		ended = append(ended, done{v, noisy})
		if noisy {
			sv.Noisy++
		}
	}
	for _, d := range ended {
		if d.noisy && sv.Noisy < sv.Done {
			continue // judged over the quiet runs
		}
		for i, l := range d.v.Lanes {
			x := l.MeasuredCores
			if sv.Unit == "s" {
				x = l.WallSeconds
			}
			sv.Lanes[i].Values = append(sv.Lanes[i].Values, x)
		}
	}
	for i := range sv.Lanes {
		sv.Lanes[i].Stats = models.Summarize(sv.Lanes[i].Values)
	}
	sv.Comparisons = models.Compare(sv.Lanes, sv.Unit)
	sv.Verdict = models.JudgeRepeats(verdicts)
	return sv, true
}

// laneOrder is the lanes of a run by the time each started.
func laneOrder(v runner.RunView) []string {
	lanes := slices.Clone(v.Lanes)
	slices.SortStableFunc(lanes, func(a, b runner.LaneResult) int { return cmp.Compare(a.StartedAt, b.StartedAt) })
	names := make([]string, len(lanes))
	for i, l := range lanes {
		names[i] = l.Name
	}
	return names
}
