package experiments

import (
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/experiments/kernelfiles"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// A lane's memory_high is checked against its --memory and the host, and
// refused where the server cannot write it, naming the lane, the field
// and why; what it plans is read back from memory.high and shown in the
// docker run text.
func TestMemoryHighIsValidated(t *testing.T) {
	host := specs.Host{NCPU: 2}
	for _, c := range []struct {
		lane, says string
		host       specs.Host
	}{
		{`"limits": {"memory": "256m"}, "memory_high": "96m"`, "", host},
		{`"memory_high": "96m"`, "", host},
		{`"limits": {"memory": "96m"}, "memory_high": "96m"`, "acts only below memory.max", host},
		{`"memory_high": "lots"`, "invalid size", host},
		{`"memory_high": "1m"`, "at least 6MB", host},
		{`"memory_high": "96m"`, "cgroup v2's", specs.Host{NCPU: 2, Unsupported: map[string]string{"memory_high": "memory.high is cgroup v2's"}}},
		{`"resources": {"limits": {"memory": "256Mi"}}, "memory_high": "96m"`, "KEP-2570", specs.Host{NCPU: 2, Kubernetes: true}},
	} {
		spec, errs := Parse([]byte(`{"lanes": [{"name": "m", "workload": {"kind": "mem", "mb": 100}, ` + c.lane + `}]}`))
		if errs != nil {
			t.Fatalf("%s: %v", c.lane, errs)
		}
		plan, errs := Validate(spec, c.host)
		switch {
		case c.says == "" && errs != nil:
			t.Errorf("%s: %v", c.lane, errs)
		case c.says == "" && plan.Lanes[0].Resources.MemoryHigh != 96<<20:
			t.Errorf("%s: memory.high planned %d", c.lane, plan.Lanes[0].Resources.MemoryHigh)
		case c.says != "" && (len(errs) != 1 || errs[0].Field != "memory_high" || errs[0].Lane != 0 || !strings.Contains(errs[0].Message, c.says)):
			t.Errorf("%s: %v, want an error on lane 0's memory_high saying %q", c.lane, errs, c.says)
		}
	}
	res := specs.Resources{Memory: 256 << 20, MemoryHigh: 96 << 20}
	found := false
	for _, f := range kernelfiles.KernelFiles(res, true, nil) {
		found = found || f.File == "memory.high" && f.Want == "100663296"
	}
	if !found {
		t.Errorf("no memory.high among the v2 files: %+v", kernelfiles.KernelFiles(res, true, nil))
	}
	if run := specs.DockerRun("img", specs.Workload{Kind: specs.KindMem}, res, ""); !strings.Contains(run, "memory.high 100663296 written into its cgroup") {
		t.Errorf("docker run text %q", run)
	}
}
