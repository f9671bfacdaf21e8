package engine_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/experiments/kernelfiles"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/moby/moby/client"
)

// TestKernelFilesReadBack gives containers every limit flag, and reads
// each flag's cgroup file back from the running container: what the
// engine applied must be what the kernel holds, in v1's files or v2's.
// Block IO weights are asked for only where the host's probe says they
// work; where it says not, a weight asked for anyway must not show.
func TestKernelFilesReadBack(t *testing.T) {
	eng, image, h := enginetest.Engine(t)
	if !h.ReadsCgroups() {
		t.Fatalf("this test reads cgroup files, which are not visible here: %s", h.StatsNote)
	}
	if !h.IOThrottle().Supported {
		t.Fatalf("block IO throttles reported unsupported (%s); the disk under the data root (%s) should take them", h.IOThrottle().Reason, h.DataRootDevice)
	}
	spin := `"workload": {"kind": "spin", "seconds": 60}`
	lanes := []string{
		`{"name": "a", ` + spin + `, "limits": {"cpus": "0.5", "cpu-shares": "512", "cpuset-cpus": "0", "memory": "64m",
		  "memory-reservation": "32m", "pids-limit": "50", "device-read-bps": "auto:1mb", "device-write-iops": "auto:5"}}`,
		`{"name": "b", ` + spin + `, "limits": {"cpu-quota": "5000", "cpu-period": "10000", "cpuset-cpus": "0,1", "memory": "64m",
		  "memory-swap": "96m", "device-write-bps": "auto:2mb", "device-read-iops": "auto:20"}}`,
		`{"name": "c", ` + spin + `, "limits": {"cpu-period": "50000", "memory": "32m", "memory-swap": "-1", "cpu-shares": "4096"}}`,
	}
	if h.IOWeight().Supported {
		lanes = append(lanes, `{"name": "w", `+spin+`, "limits": {"blkio-weight": "300"}}`,
			`{"name": "wd", `+spin+`, "limits": {"blkio-weight-device": "auto:700"}}`)
	}
	spec, errs := experiments.Parse([]byte(`{"name": "kernel files", "mode": "parallel", "lanes": [` + strings.Join(lanes, ",") + `]}`))
	if errs != nil {
		t.Fatal(errs)
	}
	plan, errs := experiments.Validate(spec, h.Experiments())
	if errs != nil {
		t.Fatal(errs)
	}
	if !h.IOWeight().Supported {
		// Unsupported here: the probe says why; a weight asked for anyway
		// (bypassing validation) does not reach the kernel.
		t.Logf("block IO weights reported unsupported: %s", h.IOWeight().Reason)
		plan.Lanes = append(plan.Lanes, specs.PlannedLane{Name: "unsupported weight", Target: -1,
			Workload: plan.Lanes[0].Workload, Resources: specs.Resources{BlkioWeight: 300}})
	}
	ctx := context.Background()
	held, total := 0, 0
	defer func() { enginetest.Figure(t, "limit flags held in their cgroup files", "%d of %d", held, total) }()
	const runID = "kernel-files"
	var ids []string
	t.Cleanup(func() { engine.RemoveRun(context.Background(), eng, runID, ids, plan.Lanes, slog.Default()) })
	for i, l := range plan.Lanes {
		c, err := engine.CreateLane(ctx, eng, "", runID, i, l, image, "")
		if c.ID != "" {
			ids = append(ids, c.ID)
		}
		if err != nil {
			t.Fatalf("lane %s: %v", l.Name, err)
		}
		if _, err := eng.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatalf("lane %s: start: %v", l.Name, err)
		}
		ins, err := eng.ContainerInspect(ctx, c.ID, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cg, err := engine.FindCgroup("/sys/fs/cgroup", c.ID, ins.Container.State.Pid)
		if err != nil {
			t.Fatal(err)
		}
		files := kernelfiles.KernelFiles(c.Applied, h.CgroupV2(), engine.DeviceNumbers(c.Applied))
		readings, err := engine.ReadKernel(cg, files)
		cg.Close()
		if err != nil {
			t.Errorf("lane %s: %v", l.Name, err)
		}
		for _, r := range readings {
			t.Logf("lane %s: %s %s → %s: want %q, read %q (present %v)", l.Name, r.Flag, r.Value, r.File, r.Want, r.Got, r.Present)
		}
		unheld := enginetest.Unheld(readings)
		if l.Name == "unsupported weight" {
			// The engine either discarded it (inspect shows none) or
			// the kernel does not hold it.
			if w := c.Applied.BlkioWeight; w != 0 && (len(unheld) != 1 || unheld[0] != "--blkio-weight") {
				t.Errorf("a weight the probe calls unsupported was applied as %d and held: flags not held %v", w, unheld)
			}
			continue
		}
		if len(unheld) > 0 {
			t.Errorf("lane %s: the kernel does not hold %v", l.Name, unheld)
		}
		flags := map[string]bool{}
		for _, r := range readings {
			flags[r.Flag] = true
		}
		total, held = total+len(flags), held+len(flags)-len(unheld)
		// Every flag the lane was given is among those read back.
		for flag, set := range map[string]bool{"--cpus": l.Resources.NanoCPUs > 0, "--cpu-shares": l.Resources.CPUShares > 0,
			"--cpuset-cpus": l.Resources.CpusetCpus != "", "--memory": l.Resources.Memory > 0, "--pids-limit": true,
			"--device-read-bps": l.Resources.ReadBps.Path != "", "--blkio-weight": l.Resources.BlkioWeight > 0} {
			found := false
			for _, r := range readings {
				found = found || r.Flag == flag
			}
			if set && !found {
				t.Errorf("lane %s: %s was not read back", l.Name, flag)
			}
		}
	}
}

func TestTheCgroupNoteNamesFailCgroupV1(t *testing.T) {
	for _, c := range []struct {
		kubelet, cgroup string
		says            bool
	}{{"v1.37.2", "1", true}, {"v1.35.0", "1", true}, {"v1.34.4", "1", false}, {"v1.37.2", "2", false}, {"", "1", false}} {
		n := engine.KubernetesFacts{KubeletVersion: c.kubelet}.CgroupNote(engine.ParseCgroupVersion(c.cgroup))
		if got := strings.Contains(n, "failCgroupV1: false"); got != c.says {
			t.Errorf("kubelet %q on cgroup v%s: %q", c.kubelet, c.cgroup, n)
		}
	}
}
