package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/engine/enginefake"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// A live change through the backend: the limits the engine applied are
// read back, and a change the engine refuses is marked as its refusal,
// in its words.
func TestDockerUpdateReadsBackWhatTheEngineApplied(t *testing.T) {
	ctx := context.Background()
	fake := enginefake.New()
	d := engine.Docker{Engine: fake}
	made, err := fake.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{Image: "x"},
		HostConfig: &container.HostConfig{Resources: container.Resources{NanoCPUs: 5e8}}})
	if err != nil {
		t.Fatal(err)
	}
	upd, err := d.Update(ctx, made.ID, specs.Resources{NanoCPUs: 15e8})
	if err != nil {
		t.Fatal(err)
	}
	if upd.Applied.NanoCPUs != 15e8 {
		t.Errorf("applied %+v after --cpus 1.5", upd.Applied)
	}
	_, err = d.Update(ctx, "gone", specs.Resources{NanoCPUs: 1e9})
	if !errors.Is(err, engine.ErrUpdateRefused) || err.Error() == "engine" {
		t.Errorf("an update of no container: %v, want the engine's refusal in its words", err)
	}
}
