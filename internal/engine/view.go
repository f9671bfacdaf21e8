package engine

import (
	"slices"

	"github.com/limitlab/limitlab/internal/experiments/models"
)

// HostView is a host as the API shows it: GET /api/host, and each
// engine's host in GET /api/engines, under the same names. It is built from
// HostInfo by View and never read back into one.
type HostView struct {
	Description string `json:"description"` // "Docker 20.10.24, cgroup v1, 2 CPUs"
	// EngineVersion, APIVersion and EngineAPIVersion are the Docker
	// Engine's (empty on Kubernetes); Kubernetes is the node's (nil on
	// Docker).
	EngineVersion    string          `json:"engine_version"`
	APIVersion       string          `json:"api_version"`
	EngineAPIVersion string          `json:"engine_api_version"`
	Kubernetes       *KubernetesView `json:"kubernetes,omitempty"`
	OS               string          `json:"os"`
	Kernel           string          `json:"kernel"`
	CgroupVersion    string          `json:"cgroup_version"`
	CgroupDriver     string          `json:"cgroup_driver"`
	CPUs             int             `json:"cpus"`
	MemoryBytes      int64           `json:"memory_bytes"`
	// Limits is every limit flag with whether the host applies it;
	// Unsupported the ones it does not, with why.
	Limits         map[string]Support `json:"limits"`
	Unsupported    map[string]string  `json:"unsupported"`
	StatsSource    string             `json:"stats_source"`
	StatsNote      string             `json:"stats_note"`
	ProgressSource string             `json:"progress_source"`
	Samples        Sampling           `json:"samples"`
	EngineWarnings []string           `json:"engine_warnings"`
	IOWeight       Support            `json:"io_weight"`
	IOThrottle     Support            `json:"io_throttle"`
	DataRootDevice string             `json:"data_root_device"`
	DataRootNote   string             `json:"data_root_note,omitempty"`
	DataRootQueue  models.QueueLimits `json:"data_root_queue"`
	IOProbe        *IOProbe           `json:"io_probe,omitempty"`
}

// KubernetesView is a Kubernetes node as the API shows it.
type KubernetesView struct {
	Node             string `json:"node"`
	ServerVersion    string `json:"server_version"`
	KubeletVersion   string `json:"kubelet_version"`
	ContainerRuntime string `json:"container_runtime"`
	CPUManager       string `json:"cpu_manager"`
	CPUManagerNote   string `json:"cpu_manager_note"`
	// CgroupNote says that a kubelet of 1.35 or later on cgroup v1 runs
	// there only with failCgroupV1: false.
	CgroupNote string `json:"cgroup_note,omitempty"`
}

// View is what the API shows of the host. Its lists are never null.
func (h HostInfo) View() HostView {
	v := HostView{
		Description: h.Describe(), EngineVersion: h.EngineVersion, APIVersion: h.APIVersion, EngineAPIVersion: h.EngineAPIVersion,
		OS: h.OS, Kernel: h.Kernel, CgroupVersion: h.Cgroup.String(), CgroupDriver: h.CgroupDriver, CPUs: h.NCPU, MemoryBytes: h.MemTotal,
		Limits: map[string]Support{}, Unsupported: map[string]string{}, StatsSource: h.StatsSource, StatsNote: h.StatsNote,
		ProgressSource: h.ProgressSource, Samples: h.Samples, EngineWarnings: slices.Clone(h.Warnings),
		IOWeight: h.IOWeight(), IOThrottle: h.IOThrottle(), DataRootDevice: h.DataRootDevice, DataRootNote: h.DataRootNote,
		DataRootQueue: h.Queue,
	}
	if k := h.Kube; k != nil {
		v.Kubernetes = &KubernetesView{Node: k.Node, ServerVersion: k.ServerVersion, KubeletVersion: k.KubeletVersion,
			ContainerRuntime: k.Runtime, CPUManager: string(k.CPUManager), CPUManagerNote: k.CPUManagerNote,
			CgroupNote: k.CgroupNote(h.Cgroup)}
	}
	for name, s := range h.Caps.ByField() {
		v.Limits[name] = s
		if !s.Supported {
			v.Unsupported[name] = s.Reason
		}
	}
	if v.EngineWarnings == nil {
		v.EngineWarnings = []string{}
	}
	if v.Samples.Missing == nil {
		v.Samples.Missing = []Missing{}
	}
	if h.IO != nil {
		p := *h.IO
		if p.Warnings == nil {
			p.Warnings = []string{}
		}
		v.IOProbe = &p
	}
	return v
}
