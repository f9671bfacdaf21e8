package experiments

import (
	"math"
	"testing"

	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// The noisy-neighbour lab has three phases: the victim alone with a CPU,
// beside two unlimited burners (three busy threads share two CPUs), and
// beside two neighbours at a quarter CPU each.
func TestPlannedPhasesOfTheNoisyNeighbour(t *testing.T) {
	lab, ok := LabByID("noisy-neighbour-cpu")
	if !ok {
		t.Fatal("no lab")
	}
	plan, errs := Validate(lab.LabSpec(), specs.Host{NCPU: 2})
	if errs != nil {
		t.Fatal(errs)
	}
	tl := models.Timeline(plan)
	if len(tl) != 5 || tl[0].From != 0 || tl[0].To != 30 || tl[0].Open || tl[1].From != 10 || tl[1].To != 20 || tl[3].From != 20 || tl[3].To != 30 {
		t.Fatalf("timeline %+v", tl)
	}
	ph := models.PlannedPhases(plan, models.ModelHost{NCPU: 2})
	want := []struct {
		from, to float64
		cores    []float64
	}{{0, 10, []float64{1}}, {10, 20, []float64{2.0 / 3, 2.0 / 3, 2.0 / 3}}, {20, 30, []float64{1, 0.25, 0.25}}}
	if len(ph) != len(want) {
		t.Fatalf("phases %+v, want %d", ph, len(want))
	}
	for k, w := range want {
		p := ph[k]
		if p.From != w.from || p.To != w.to || len(p.Cores) != len(w.cores) {
			t.Errorf("phase %d: %+v, want %v–%v s with %v", k+1, p, w.from, w.to, w.cores)
			continue
		}
		for j := range w.cores {
			if math.Abs(p.Cores[j]-w.cores[j]) > 0.01 {
				t.Errorf("phase %d lane %d: %.3f cores, want %.3f", k+1, p.Lanes[j], p.Cores[j], w.cores[j])
			}
		}
	}
	seq, _ := Validate(specs.Spec{Mode: specs.Sequential, Lanes: []specs.Lane{{Workload: specs.Workload{Kind: specs.KindMD5}}}}, specs.Host{NCPU: 2})
	if models.Timeline(seq) != nil || models.PlannedPhases(seq, models.ModelHost{NCPU: 2}) != nil {
		t.Error("a sequential plan has a timeline or phases")
	}
}
