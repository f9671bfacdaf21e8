package engine_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/moby/moby/client"
)

// startLane creates and starts one lane's container on the real engine,
// removed when the test ends, and returns it with its cgroup's reader
// (closed then too).
func startLane(t *testing.T, eng engine.Engine, image, runID string, lane experiments.PlannedLane) (engine.Created, *engine.CgroupReader) {
	t.Helper()
	ctx := context.Background()
	c, err := engine.CreateLane(ctx, eng, "", runID, 0, lane, image, "")
	if c.ID != "" {
		t.Cleanup(func() {
			engine.RemoveRun(context.Background(), eng, runID, []string{c.ID}, []experiments.PlannedLane{lane}, slog.Default())
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	ins, err := eng.ContainerInspect(ctx, c.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cg, err := engine.FindCgroup("/sys/fs/cgroup", c.ID, ins.Container.State.Pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cg.Close() })
	return c, cg
}
