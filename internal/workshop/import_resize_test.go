package workshop

import (
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
)

// A pod lane's resize as an imported file records it: kept when it is one
// the server could have made, its command made anew; refused, naming
// what, otherwise.
func TestAnImportedResizeIsChecked(t *testing.T) {
	pod := runner.LaneResult{Pod: &specs.Pod{RequestMilliCPU: 250, LimitMilliCPU: 500, QoS: specs.QoSBurstable}}
	good := func() *runner.ChangeRecord {
		return &runner.ChangeRecord{Limits: specs.Limits{Resources: &specs.PodResources{Limits: specs.PodResourceList{CPU: "1500m"}}},
			Resize: &runner.ResizeRecord{State: "Done", QoS: specs.QoSBurstable, Command: "kubectl delete namespace kube-system",
				Requested: specs.PodResources{Requests: specs.PodResourceList{CPU: "250m"}, Limits: specs.PodResourceList{CPU: "1500m"}},
				Applied:   specs.PodResources{Requests: specs.PodResourceList{CPU: "250m"}, Limits: specs.PodResourceList{CPU: "1500m"}}}}
	}
	c := good()
	if err := cleanResize(c, pod, "limitlab-r-0"); err != nil {
		t.Fatal(err)
	}
	if want := `kubectl patch pod limitlab-r-0 --subresource resize --patch '{"spec":{"containers":[{"name":"workload","resources":{"limits":{"cpu":"1500m"},"requests":{"cpu":"250m"}}}]}}'`; c.Resize.Command != want {
		t.Errorf("command %q, want %q", c.Resize.Command, want)
	}
	for _, tt := range []struct {
		name   string
		change func(c *runner.ChangeRecord)
		lane   runner.LaneResult
		want   string
	}{
		{"on a container", func(*runner.ChangeRecord) {}, runner.LaneResult{}, "not a pod"},
		{"a state kubelet has no word for", func(c *runner.ChangeRecord) { c.Resize.State = "<b>hacked</b>" }, pod, "hacked"},
		{"refused, yet recorded", func(c *runner.ChangeRecord) { c.Resize.State = "Infeasible" }, pod, "Infeasible"},
		{"a quantity that is not one", func(c *runner.ChangeRecord) { c.Resize.Requested.Limits.CPU = "$(reboot)" }, pod, "not a Kubernetes quantity"},
		{"a QoS class that is not one", func(c *runner.ChangeRecord) { c.Resize.QoS = "Platinum" }, pod, "Platinum"},
		{"asked for nothing", func(c *runner.ChangeRecord) { c.Limits = specs.Limits{} }, pod, "asked for nothing"},
	} {
		c := good()
		tt.change(c)
		if err := cleanResize(c, tt.lane, "limitlab-r-0"); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want an error naming %q", tt.name, err, tt.want)
		}
	}
}
