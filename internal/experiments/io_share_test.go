package experiments

import "testing"

func TestJudgeIOShare(t *testing.T) {
	plan := Plan{Mode: Parallel, Lanes: []PlannedLane{
		{Name: "weight 100", Resources: Resources{BlkioWeight: 100}},
		{Name: "weight 1000", Resources: Resources{BlkioWeight: 1000}},
	}}
	spec := VerdictSpec{Metric: MetricIOShare, Tolerance: 0.5}
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
	dev := Plan{Lanes: []PlannedLane{{Resources: Resources{BlkioWeightDevice: DeviceRate{"/dev/vda", 200}}}, {}}}
	if v := JudgeIO(spec, dev, []IOOutcome{{WindowBps: 2}, {WindowBps: 1}}, QueueLimits{}); v.Predicted[1] != 0.5 {
		t.Errorf("a per-device weight of 200 against the default 100: predicted %v", v.Predicted)
	}
}
