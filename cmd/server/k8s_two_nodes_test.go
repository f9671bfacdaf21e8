//go:build k8s

package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/runner"
)

// The test cluster's two real nodes (k8s/run.sh's two-node round): the
// host's, on cgroup v1, and the VM's, on cgroup v2, each an engine of the
// pool. Both come up, each row saying its node's cgroup version; two runs
// submitted at once are placed one on each node, and the VM node's is
// read through its sampler.
func TestTwoRealNodesShareThePool(t *testing.T) {
	kc, bin := os.Getenv("LIMITLAB_KUBECONFIG"), os.Getenv("LIMITLAB_WORKLOAD_BIN")
	if kc == "" || bin == "" {
		t.Fatal("LIMITLAB_KUBECONFIG and LIMITLAB_WORKLOAD_BIN name no cluster: run make test-k8s, which starts one")
	}
	m, nodes := nodesPool(t, kc, bin, "two-nodes-test")
	if len(nodes) != 2 {
		t.Fatalf("nodes %v; want the host's and the VM's", nodes)
	}
	enginetest.WaitFor(t, 2*time.Minute, "both nodes' engines to be up", func() bool {
		up := 0
		for _, e := range m.Engines() {
			if e.Up {
				up++
			}
		}
		return up == 2
	})
	versions := map[string]string{}
	for _, e := range m.Engines() {
		if e.Host == nil {
			t.Fatalf("engine %s: no host", e.Name)
		}
		t.Logf("engine %s (%s): cgroup v%s, stats from %s: %s", e.Name, e.Address, e.Host.CgroupVersion, e.Host.StatsSource, e.Host.Description)
		versions[e.Host.CgroupVersion] = e.Name
		v1Row := strings.Contains(e.Host.Description, "failCgroupV1: false")
		if v1Row != (e.Host.CgroupVersion == "1") {
			t.Errorf("engine %s on cgroup v%s: its row names failCgroupV1: false %v, want only on v1", e.Name, e.Host.CgroupVersion, v1Row)
		}
	}
	if versions["1"] == "" || versions["2"] == "" {
		t.Fatalf("the engines' cgroup versions %v, want one node on each", versions)
	}

	runs := submitTwice(t, m, `{"mode": "parallel", "duration": "60s", "lanes": [{"workload": {"kind": "spin", "threads": 1, "seconds": 3}, "resources": {"limits": {"cpu": "500m", "memory": "32Mi"}}}]}`)
	on := map[string]runner.RunView{}
	for _, r := range runs {
		v := enginetest.WaitDone(t, r, 4*time.Minute)
		if v.State != runner.StateDone {
			t.Errorf("run %s: %s on %q: %s", v.ID, v.State, v.Engine, v.Error)
		}
		on[v.Engine] = v
		l := v.Lanes[0]
		t.Logf("run %s on %s (%s): %s, %.2f cores, stats from %s", v.ID, v.Engine, v.Host, v.State, l.MeasuredCores, l.StatsSource)
		enginetest.Figure(t, "pod start, "+v.Host, "%.2f s from the run's start to its pod's first work", l.StartedAt)
	}
	if len(on) != 2 {
		t.Fatalf("both runs on %v, want one on each node", on)
	}
	if v := on[versions["2"]]; v.Lanes[0].StatsSource != engine.StatsSampler {
		t.Errorf("the VM node's run read from %q, want its sampler", v.Lanes[0].StatsSource)
	}
}
