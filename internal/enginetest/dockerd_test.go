package enginetest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/testbed"
)

// hostState is what a test engine must leave of the machine: its network
// links, by name, and the test engine's cgroups in every hierarchy.
func hostState(t *testing.T, parent string) (links, cgroups []string) {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		links = append(links, i.Name)
	}
	cgroups, _ = filepath.Glob("/sys/fs/cgroup/*/" + parent)
	return links, cgroups
}

// TestATestEngineLeavesTheHostAsItWas: a test engine (a dockerd with
// --bridge=none, which deletes any docker0 it sees) runs a lane and
// stops; the machine's links, its engine's docker0 among them, are as
// they were throughout, and the cgroups the engine made are gone.
func TestATestEngineLeavesTheHostAsItWas(t *testing.T) {
	if _, err := os.Stat("/sys/class/net/docker0"); err != nil {
		t.Fatalf("the machine's engine has no docker0 (%v): start dockerd, or restart it if a test engine deleted its bridge", err)
	}
	bin, err := BuildBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const name = "hostchk"
	linksBefore, _ := hostState(t, testbed.CgroupParent(name))
	d, err := testbed.StartEngine(name, testbed.DockerdOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Registered first, run last: after the lane's own cleanup.
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("closing the test engine: %v", err)
		}
		linksAfter, cgroupsAfter := hostState(t, testbed.CgroupParent(name))
		if !slices.Equal(linksAfter, linksBefore) {
			t.Errorf("links after a test engine: %v, before: %v", linksAfter, linksBefore)
		}
		if len(cgroupsAfter) > 0 {
			t.Errorf("the test engine's cgroups are left: %v", cgroupsAfter)
		}
	})
	ctx := context.Background()
	_, img, err := testbed.Prepare(ctx, d.Client, bin)
	if err != nil {
		t.Fatal(err)
	}
	lane := specs.PlannedLane{Name: "spin", Workload: specs.Workload{Kind: "spin", Seconds: 1}, Target: -1}
	StartLane(t, d.Client, img, "hostchk-run", lane)
	linksWhile, cgroupsWhile := hostState(t, testbed.CgroupParent(name))
	if !slices.Equal(linksWhile, linksBefore) {
		t.Errorf("links while a test engine runs: %v, before: %v", linksWhile, linksBefore)
	}
	if len(cgroupsWhile) == 0 {
		t.Errorf("the test engine's lane made no cgroup under %s: this test checks nothing of cgroups", testbed.CgroupParent(name))
	}
}
