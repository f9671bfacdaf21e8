package runner

import (
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments"
)

func TestVerdictsNeedingAMissingSignalAreNotJudged(t *testing.T) {
	lacksCPU := engine.Sampling{Missing: []engine.Missing{{Signal: engine.SignalCPU, Why: "a test host"}}}
	lacksPSI := engine.Sampling{Missing: []engine.Missing{{Signal: engine.SignalCPUPressure, Why: "cgroup v1"}}}
	tests := []struct {
		name    string
		spec    experiments.VerdictSpec
		s       engine.Sampling
		blocked bool
	}{
		{"cpu metric without cpu samples", experiments.VerdictSpec{Metric: experiments.MetricCPU}, lacksCPU, true},
		{"cpu metric without PSI", experiments.VerdictSpec{Metric: experiments.MetricCPU}, lacksPSI, false},
		{"wall time: the workload's own account", experiments.VerdictSpec{Metric: experiments.MetricWallTime}, lacksCPU, false},
		{"io limit: the workload's own rates", experiments.VerdictSpec{Metric: experiments.MetricIOLimit}, lacksCPU, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, blocked := unjudgeable(tt.spec, tt.s)
			if blocked != tt.blocked {
				t.Fatalf("blocked %v, want %v", blocked, tt.blocked)
			}
			if blocked && (v.Judged || !strings.Contains(v.Explanation, "a test host")) {
				t.Errorf("verdict %+v: want not judged, saying why", v)
			}
		})
	}
}
