package engine

import (
	"testing"

	"github.com/moby/moby/api/types/system"
)

// Every limit of a host is either applied or refused with a reason, under
// the name the spec gives its field: a Docker host's from the engine's
// word, a node's from what a pod has words for.
func TestCapabilitiesNameEveryLimit(t *testing.T) {
	docker := limitSupport(system.Info{CPUCfsQuota: true, CPUCfsPeriod: true, CPUShares: true, CPUSet: true, MemoryLimit: true, PidsLimit: true,
		Warnings: []string{"WARNING: No blkio weight support", "WARNING: No blkio weight_device support"}}, CgroupV1)
	docker.CPUBurst, docker.MemoryHigh = Support{Supported: true}, Support{Reason: "cgroup v1"}
	node := KubernetesHost(KubernetesNode{Name: "n", NCPU: 2, Cgroup: CgroupV2}).Caps
	for name, c := range map[string]Capabilities{"docker": docker, "node": node} {
		fields := c.ByField()
		if len(fields) != 17 {
			t.Errorf("%s: %d limits, want 17", name, len(fields))
		}
		for f, s := range fields {
			if !s.Supported && s.Reason == "" {
				t.Errorf("%s: %s refused with no reason", name, f)
			}
		}
	}
	if docker.MemorySwap.Supported || docker.BlkioWeight.Supported || !docker.ReadBps.Supported || !docker.CPUs.Supported {
		t.Errorf("docker: %+v", docker)
	}
	if !node.CPUs.Supported || !node.Memory.Supported || node.PidsLimit.Supported || node.CPUBurst.Supported {
		t.Errorf("node: %+v", node)
	}
	if ParseCgroupVersion("2") != CgroupV2 || ParseCgroupVersion("") != CgroupV1 || CgroupV2.String() != "2" {
		t.Error("cgroup versions")
	}
}
