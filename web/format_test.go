package web

import (
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
)

// TestDeviationText: a ratio's deviation is relative, but against a
// prediction of none or next to none it is absolute: 0.027 against a
// starved 0.004 is not "+577%".
func TestDeviationText(t *testing.T) {
	for _, c := range []struct {
		measured, predicted float64
		want                string
	}{
		{0.79, 1, "-21.0%"},
		{1.05, 1, "5.0%"},
		{0.027, 0.004, "0.02 (absolute)"},
		{0.03, 0, "0.03 (absolute)"},
		{0, 0, "0.00 (absolute)"},
	} {
		if got := deviationText(c.measured, c.predicted); got != c.want {
			t.Errorf("deviationText(%g, %g) = %q, want %q", c.measured, c.predicted, got, c.want)
		}
	}
}

func TestMissingTextSaysEachReasonOnce(t *testing.T) {
	why := "cgroup v1 has no pressure stall information (PSI)"
	got := missingText([]engine.Missing{{Signal: "cpu_pressure", Why: why}, {Signal: "memory_pressure", Why: why}, {Signal: "io_pressure", Why: why}, {Signal: "io_bytes", Why: "the engine's stats"}})
	want := "Not in these samples: cpu_pressure, memory_pressure and io_pressure (" + why + "); io_bytes (the engine's stats)."
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestNoiseTextNamesTheControlPlane: on a Kubernetes node the results say
// that the host's other work includes the node's control plane; on a
// Docker host they do not.
func TestNoiseTextNamesTheControlPlane(t *testing.T) {
	v := runner.RunView{Noise: &runner.HostNoise{Measured: true, ForeignCores: 0.3}}
	v.Lanes = []runner.LaneResult{{Name: "guaranteed"}}
	if got := noiseText(v); strings.Contains(got, "control plane") {
		t.Errorf("a Docker run's host line names a control plane: %s", got)
	}
	v.Lanes[0].Pod = &specs.Pod{}
	if got := noiseText(v); !strings.Contains(got, "the node's control plane and kubelet") {
		t.Errorf("a pod's host line does not say the control plane is other work: %s", got)
	}
}
