package runner

import (
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

func TestVerdictsNeedingAMissingSignalAreNotJudged(t *testing.T) {
	lacksCPU := engine.Sampling{Missing: []engine.Missing{{Signal: engine.SignalCPU, Why: "a test host"}}}
	lacksPSI := engine.Sampling{Missing: []engine.Missing{{Signal: engine.SignalCPUPressure, Why: "cgroup v1"}}}
	tests := []struct {
		name    string
		spec    specs.VerdictSpec
		s       engine.Sampling
		blocked bool
	}{
		{"cpu metric without cpu samples", specs.VerdictSpec{Metric: specs.MetricCPU}, lacksCPU, true},
		{"cpu metric without PSI", specs.VerdictSpec{Metric: specs.MetricCPU}, lacksPSI, false},
		{"wall time: the workload's own account", specs.VerdictSpec{Metric: specs.MetricWallTime}, lacksCPU, false},
		{"io limit: the workload's own rates", specs.VerdictSpec{Metric: specs.MetricIOLimit}, lacksCPU, false},
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
