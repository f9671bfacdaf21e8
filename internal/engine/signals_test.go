package engine_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// TestEngineStatsAgainstCgroupFiles reads one busy container through both
// sources: every signal the cgroup files show, the engine's stats show
// too, unless the host's Sampling declares it missing there.
func TestEngineStatsAgainstCgroupFiles(t *testing.T) {
	eng, image, h := enginetest.Engine(t)
	if !h.ReadsCgroups() {
		t.Fatalf("this test compares the engine's stats with the cgroup files, which are not visible here: %s", h.StatsNote)
	}
	ctx := context.Background()
	// Throttled, so that it is still writing while both sources are read.
	lane := specs.PlannedLane{Workload: specs.Workload{Kind: specs.KindDiskWrite, MB: 400, BS: 1 << 20}, Target: -1,
		Resources: specs.Resources{WriteBps: specs.DeviceRate{Path: h.DataRootDevice, Rate: 20 << 20}}}
	c, files := startLane(t, eng, image, "signals", lane)
	remote := h
	remote.StatsSource = engine.StatsEngine
	stats, _, _ := engine.OpenReader(ctx, eng, remote, c.ID, 0, slog.Default())
	var fromFiles, fromEngine engine.Counters
	var err error
	enginetest.WaitFor(t, time.Minute, "IO in both sources", func() bool {
		fromFiles, err = files.Read()
		if err != nil {
			t.Fatal(err)
		}
		if fromEngine, err = stats.Read(); err != nil {
			return false
		}
		return fromFiles.WriteOps > 0 && fromEngine.WriteBytes > 0
	})
	shown := func(c engine.Counters) map[engine.Signal]bool {
		return map[engine.Signal]bool{
			engine.SignalCPU:         c.CPUNs > 0 && c.UserNs+c.SysNs > 0,
			engine.SignalMemory:      c.MemBytes > 0,
			engine.SignalIOBytes:     c.WriteBytes > 0,
			engine.SignalIOOps:       c.WriteOps > 0,
			engine.SignalPIDs:        c.Pids > 0,
			engine.SignalCPUPressure: c.HasPressure,
		}
	}
	inFiles, inEngine := shown(fromFiles), shown(fromEngine)
	remoteSampling := remote.Sampling()
	for sig, ok := range inFiles {
		_, declared := remoteSampling.Lacks(sig)
		if ok && !inEngine[sig] && !declared {
			t.Errorf("the engine's stats lack %s, which the cgroup files have, and the host does not say so", sig)
		}
		if inEngine[sig] && declared {
			t.Errorf("the host says the engine's stats lack %s, but they carry it", sig)
		}
	}
}
