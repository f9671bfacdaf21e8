package runner_test

import (
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/runner"
)

// TestMemoryHighLab runs memory-high where the host can write memory.high
// (a local engine on cgroup v2: the VM): the lane under memory.max is OOM
// killed, the lane under memory.high is not, its memory.high reads back
// from its cgroup, its memory stays far below what it asked for, and its
// memory pressure rises. On cgroup v1 the lab is refused before anything
// starts, naming the lane and the field, and saying why.
func TestMemoryHighLab(t *testing.T) {
	m := newTestManager(t)
	h := m.Pool().Host()
	spec, errs := experiments.Parse([]byte(`{"lab": "memory-high"}`))
	if errs != nil {
		t.Fatal(errs)
	}
	p, errs := experiments.Validate(spec, h.Experiments())
	if !h.Caps.MemoryHigh.Supported {
		if len(errs) != 1 || errs[0].Lane != 1 || errs[0].Field != "memory_high" || !strings.Contains(errs[0].Message, h.Caps.MemoryHigh.Reason) {
			t.Fatalf("memory.high unsupported here (%s), and the lab's validation says %v", h.Caps.MemoryHigh.Reason, errs)
		}
		t.Logf("refused, as it should be here: %v", errs)
		return
	}
	if errs != nil {
		t.Fatalf("memory.high supported, and the lab is refused: %v", errs)
	}
	r, err := m.SubmitFrom(spec, p, "", "")
	if err != nil {
		t.Fatal(err)
	}
	v := waitDone(t, r, 3*time.Minute)
	maxLane, highLane := v.Lanes[0], v.Lanes[1]
	if !maxLane.OOMKilled {
		t.Errorf("%s: not OOM killed (exit %v)", maxLane.Name, maxLane.ExitCode)
	}
	if highLane.OOMKilled {
		t.Errorf("%s: OOM killed under memory.max 256m", highLane.Name)
	}
	holds := false
	if highLane.Kernel != nil {
		for _, f := range highLane.Kernel.Files {
			if f.File == "memory.high" {
				holds = f.Holds && strings.TrimSpace(f.Got) == "100663296"
				t.Logf("memory.high reads %q (holds %v)", f.Got, f.Holds)
			}
		}
	}
	if !holds {
		t.Errorf("%s: memory.high not read back as 100663296: %+v", highLane.Name, highLane.Kernel)
	}
	peak, pressure := 0.0, 0.0
	for _, s := range samplesOf(t, r) {
		if s.Lane != 1 {
			continue
		}
		peak = max(peak, s.MemMiB)
		if s.MemPressure != nil {
			pressure = max(pressure, *s.MemPressure)
		}
	}
	enginetest.Figure(t, "memory-high (the memory.high lane: peak MiB of 200 asked, peak memory pressure ms/s)", "%.0f, %.1f; the memory.max lane OOM killed %v", peak, pressure, maxLane.OOMKilled)
	if peak <= 0 || peak > 180 {
		t.Errorf("%s: peak %.0f MiB, want it held well below the 200 MiB it asked for", highLane.Name, peak)
	}
	if pressure <= 0 {
		t.Errorf("%s: no memory pressure above memory.high", highLane.Name)
	}
	if v.State != runner.StateDone && v.State != runner.StateFailed {
		t.Errorf("run %s: %s", v.State, v.Error)
	}
}
