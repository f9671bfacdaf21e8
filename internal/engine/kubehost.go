package engine

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// KubernetesNode is what a cluster tells of the node its runs take.
type KubernetesNode struct {
	Name, ServerVersion, KubeletVersion, Kernel, OS, Runtime string
	Cgroup                                                   CgroupVersion
	NCPU                                                     int
	MemTotal                                                 int64
	// CgroupRoot is where the node's cgroup files are seen from here,
	// Local whether kubelet's pod cgroups are there.
	CgroupRoot string
	Local      bool
	// CPUManager is kubelet's CPU manager policy as a probe pod showed
	// it ("" unknown), CPUManagerNote what it saw.
	CPUManager     specs.CPUManagerPolicy
	CPUManagerNote string
	// Sampler is the address of the node's sampler, when the pods' cgroup
	// files are read through it.
	Sampler string
}

// KubernetesFacts is what a host that is a Kubernetes node has beyond a
// Docker Engine's: the node, the versions of the cluster, kubelet and the
// container runtime, and kubelet's CPU manager policy.
type KubernetesFacts struct {
	Node, ServerVersion, KubeletVersion, Runtime string
	// CPUManager is kubelet's CPU manager policy, as a probe pod showed
	// it, and CPUManagerNote what the probe saw.
	CPUManager     specs.CPUManagerPolicy
	CPUManagerNote string
}

// KubernetesHost is a node as a host of runs: the limits a pod has words
// for are supported, the rest refused with the reason, and the pods'
// counters are read from the node's cgroup files.
func KubernetesHost(n KubernetesNode) HostInfo {
	h := HostInfo{
		Kube: &KubernetesFacts{Node: n.Name, ServerVersion: n.ServerVersion, KubeletVersion: n.KubeletVersion, Runtime: n.Runtime,
			CPUManager: n.CPUManager, CPUManagerNote: n.CPUManagerNote},
		OS: n.OS, Kernel: n.Kernel, Cgroup: n.Cgroup, CgroupDriver: "kubelet",
		NCPU: n.NCPU, MemTotal: n.MemTotal,
		local: n.Local, cgroupRoot: n.CgroupRoot,
	}
	yes := Support{Supported: true}
	h.Caps.CPUs, h.Caps.CPUQuota, h.Caps.CPUShares, h.Caps.Memory = yes, yes, yes, yes
	fields := h.Caps.fields()
	for f, why := range specs.KubernetesUnsupported {
		*fields[f] = Support{Reason: why}
	}
	h.Caps.CPUBurst = Support{Reason: "a pod's cgroup files are kubelet's to write: a CFS burst needs a local Docker engine"}
	h.Caps.MemoryHigh = Support{Reason: "a pod's memory.high is kubelet's to write (Memory QoS, KEP-2570): memory.high needs a local Docker engine on cgroup v2"}
	h.StatsSource = StatsCgroup
	h.StatsNote = "read from the pods' cgroup files (kubepods) under " + n.CgroupRoot + " on node " + n.Name
	if n.Sampler != "" {
		h.StatsSource = StatsSampler
		h.StatsNote = "read from the pods' cgroup files on node " + n.Name + " by its sampler pod at " + n.Sampler
	}
	h.ProgressSource = ProgressLog
	h.DataRootNote = "pods have no block IO limits"
	h.Samples = h.Sampling()
	return h
}

// Kubernetes says whether the host's lanes run as pods.
func (h HostInfo) Kubernetes() bool { return h.Kube != nil }

func describeKubernetes(h HostInfo) string {
	d := fmt.Sprintf("Kubernetes %s, node %s, cgroup v%s", h.Kube.ServerVersion, h.Kube.Node, h.Cgroup)
	if n := h.Kube.CgroupNote(h.Cgroup); n != "" {
		d += " (" + n + ")"
	}
	d += fmt.Sprintf(", %d CPUs", h.NCPU)
	if h.Kube.CPUManager != "" {
		d += ", CPU manager " + string(h.Kube.CPUManager)
	}
	return d
}

// CgroupNote says how kubelet runs on a cgroup v1 node (cgroup is the
// node's version): from Kubernetes 1.35 kubelet refuses to start on cgroup
// v1 unless its configuration sets failCgroupV1: false (KEP-5573), so one
// that runs there has it set. It is "" on cgroup v2, or for an older
// kubelet.
func (k KubernetesFacts) CgroupNote(cgroup CgroupVersion) string {
	if cgroup != CgroupV1 || kubeletMinor(k.KubeletVersion) < 35 {
		return ""
	}
	return "kubelet " + k.KubeletVersion + " runs on cgroup v1 only with failCgroupV1: false (KEP-5573)"
}

// kubeletMinor is the minor version of a kubelet's "v1.37.2" (0 if it is
// not one).
func kubeletMinor(v string) int {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 || parts[0] != "1" {
		return 0
	}
	n, _ := strconv.Atoi(parts[1])
	return n
}
