package engine_test

import (
	"testing"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// startLane creates and starts one lane's container on the real engine,
// removed when the test ends, and returns it with its cgroup's reader
// (closed then too).
func startLane(t *testing.T, eng engine.Engine, image, runID string, lane specs.PlannedLane) (engine.Created, *engine.CgroupReader) {
	t.Helper()
	c, pid := enginetest.StartLane(t, eng, image, runID, lane)
	cg, err := engine.FindCgroup("/sys/fs/cgroup", c.ID, pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cg.Close() })
	return c, cg
}
