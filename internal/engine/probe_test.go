package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/moby/moby/api/types/blkiodev"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// TestIOCapabilitiesAreProbed: the weight and throttle support GET
// /api/host reports agrees with what this host really does, found here
// independently: the disk's scheduler from sysfs, and the warnings of a
// container created with a weight.
func TestIOCapabilitiesAreProbed(t *testing.T) {
	eng, image, h := enginetest.Engine(t)
	if h.IO == nil {
		t.Fatalf("no IO probe ran: weights %+v, throttles %+v", h.IOWeight(), h.IOThrottle())
	}
	sched, err := os.ReadFile("/sys/block/" + filepath.Base(h.DataRootDevice) + "/queue/scheduler")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := eng.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: image, Cmd: []string{"spin"}},
		HostConfig: &container.HostConfig{Resources: container.Resources{BlkioWeight: 500, BlkioDeviceWriteBps: []*blkiodev.ThrottleDevice{{Path: h.DataRootDevice, Rate: 1 << 20}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.ContainerRemove(ctx, res.ID, client.ContainerRemoveOptions{Force: true})
	discarded := strings.Contains(strings.Join(res.Warnings, " "), "Weight discarded")
	bfq := strings.Contains(string(sched), "[bfq]")
	if want := bfq && !discarded; h.IOWeight().Supported != want {
		t.Errorf("weights reported %v (%s); this host: scheduler %q, weight discarded %v", h.IOWeight().Supported, h.IOWeight().Reason, strings.TrimSpace(string(sched)), discarded)
	}
	if !h.IOWeight().Supported && h.IOWeight().Reason == "" {
		t.Error("weights unsupported, and no reason given")
	}
	if h.IOThrottle().Supported != strings.Contains(h.IO.ThrottleValue, "1048576") {
		t.Errorf("throttles reported %v, but the probe's %s holds %q", h.IOThrottle().Supported, h.IO.ThrottleFile, h.IO.ThrottleValue)
	}
	if w := h.Caps.ByField()["blkio-weight"]; w != h.IOWeight() {
		t.Errorf("the blkio-weight field says %+v, the probe %+v", w, h.IOWeight())
	}
}
