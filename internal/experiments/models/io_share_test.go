package models

import (
	"testing"

	"github.com/limitlab/limitlab/internal/experiments/specs"
)

func TestJudgeIOShare(t *testing.T) {
	plan := specs.Plan{Mode: specs.Parallel, Lanes: []specs.PlannedLane{
		{Name: "weight 100", Resources: specs.Resources{BlkioWeight: 100}},
		{Name: "weight 1000", Resources: specs.Resources{BlkioWeight: 1000}},
	}}
	spec := specs.VerdictSpec{Metric: specs.MetricIOShare, Tolerance: 0.5}
	cases := []struct {
		name          string
		bps           []float64
		judged, pass  bool
		measuredRatio float64
	}{
		{"ten to one", []float64{1e6, 9e6}, true, true, 9},
		{"weights ignored", []float64{8.8e6, 8.8e6}, true, false, 1},
		{"a lane did nothing", []float64{0, 9e6}, false, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := []IOOutcome{{WindowBps: c.bps[0]}, {WindowBps: c.bps[1]}}
			v := JudgeIO(spec, plan, out, QueueLimits{})
			if v.Judged != c.judged || v.Pass != c.pass {
				t.Fatalf("judged %v pass %v: %s", v.Judged, v.Pass, v.Explanation)
			}
			if c.judged && (v.Predicted[1] != 10 || v.Measured[1] != c.measuredRatio) {
				t.Errorf("predicted %v measured %v", v.Predicted, v.Measured)
			}
		})
	}
	dev := specs.Plan{Lanes: []specs.PlannedLane{{Resources: specs.Resources{BlkioWeightDevice: specs.DeviceRate{Path: "/dev/vda", Rate: 200}}}, {}}}
	if v := JudgeIO(spec, dev, []IOOutcome{{WindowBps: 2}, {WindowBps: 1}}, QueueLimits{}); v.Predicted[1] != 0.5 {
		t.Errorf("a per-device weight of 200 against the default 100: predicted %v", v.Predicted)
	}
}

func TestContendedIO(t *testing.T) {
	s := func(t, bps float64) CoreSample { return CoreSample{T: t, DT: 0.25, IOBps: bps} }
	// The light lane writes alone at first; the heavy one starts at 0.5
	// and, while both write, takes the disk wholly for a tick; it is done
	// at 1.25 (its container is seen to exit later), and the light lane
	// writes alone again, which does not count either.
	light := []CoreSample{s(0.25, 100), s(0.5, 100), s(0.75, 10), s(1.0, 0), s(1.25, 20), s(1.5, 100), s(1.75, 100)}
	heavy := []CoreSample{s(0.2501, 0), s(0.5001, 0), s(0.7501, 90), s(1.0001, 100), s(1.2501, 80), s(1.5001, 0)}
	got := ContendedIO([][]CoreSample{light, heavy}, 0.125)
	if got[0] != 10 || got[1] != 90 {
		t.Errorf("contended rates %v, want [10 90]", got)
	}
	if got := ContendedIO([][]CoreSample{light, {}}, 0.125); got[0] != 0 || got[1] != 0 {
		t.Errorf("with a lane that never did IO: %v", got)
	}
}
