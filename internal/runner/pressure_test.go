package runner_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/runner"
)

// TestPressureSampled: on cgroup v2 every sample carries the three PSI
// stalls (cpu.pressure, memory.pressure, io.pressure), and they show what
// the lanes suffer: two spinners on one CPU wait for it, a throttled
// writer waits for its IO. On v1 no sample carries any, and the host says
// why.
func TestPressureSampled(t *testing.T) {
	enginetest.Measure(t, "pressure sampled", pressureSampled)
}

func pressureSampled(t testing.TB) {
	m := newTestManager(t)
	h := m.Pool().Host()
	r := startSpec(t, m, `{"name": "pressure", "mode": "parallel", "duration": "60s", "lanes": [
	  {"name": "spin a", "workload": {"kind": "spin", "seconds": 6}, "limits": {"cpuset-cpus": "0"}},
	  {"name": "spin b", "workload": {"kind": "spin", "seconds": 6}, "limits": {"cpuset-cpus": "0"}},
	  {"name": "writer", "workload": {"kind": "disk-write", "mb": 12, "bs": 1048576}, "limits": {"device-write-bps": "auto:2mb"}}]}`)
	v := waitDone(t, r, 3*time.Minute)
	if v.State != runner.StateDone {
		t.Fatalf("state %s: %s", v.State, v.Error)
	}
	samples := samplesOf(t, r)
	if !h.HasPressure() {
		for _, s := range samples {
			if s.CPUPressure != nil || s.MemPressure != nil || s.IOPressure != nil {
				t.Fatalf("cgroup v%s has no PSI, and a sample carries some: %+v", h.Cgroup, s)
			}
		}
		enginetest.Figure(t, "PSI stalls (ms on CPU / memory / IO)", "none: %s", why(h))
		for _, sig := range []engine.Signal{engine.SignalCPUPressure, engine.SignalMemPressure, engine.SignalIOPressure} {
			if _, lacks := h.Samples.Lacks(sig); !lacks {
				t.Errorf("no PSI here, and the host does not say it lacks %s", sig)
			}
		}
		return
	}
	total := map[int][3]float64{}
	for _, s := range samples {
		if s.CPUPressure == nil || s.MemPressure == nil || s.IOPressure == nil {
			t.Fatalf("cgroup v2, and a sample lacks a pressure stall: %+v", s)
		}
		p := total[s.Lane]
		p[0], p[1], p[2] = p[0]+*s.CPUPressure*s.DT, p[1]+*s.MemPressure*s.DT, p[2]+*s.IOPressure*s.DT
		total[s.Lane] = p
	}
	for lane, p := range total {
		enginetest.Figure(t, fmt.Sprintf("PSI stalls, %s (ms on CPU / memory / IO)", v.Lanes[lane].Name), "%.0f / %.0f / %.0f", p[0], p[1], p[2])
	}
	for lane := range 2 {
		if total[lane][0] < 1000 {
			t.Errorf("spinner %d shared one CPU for 6 s and waited only %.0f ms for it", lane, total[lane][0])
		}
	}
	if total[2][2] < 1000 {
		t.Errorf("the writer, throttled to 2 MiB/s for 12 MiB, waited only %.0f ms for IO", total[2][2])
	}
}

func why(h engine.HostInfo) string {
	w, _ := h.Samples.Lacks(engine.SignalCPUPressure)
	return w
}
