package specs

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// PodResources are a lane's limits in Kubernetes' words, as a pod's
// container gives them: {"requests": {"cpu": "250m", "memory": "64Mi"},
// "limits": {"cpu": "500m", "memory": "128Mi"}}, in Kubernetes' quantity
// syntax.
type PodResources struct {
	Requests PodResourceList `json:"requests,omitzero"`
	Limits   PodResourceList `json:"limits,omitzero"`
}

// PodResourceList is the CPU and memory of a requests or limits list.
type PodResourceList struct {
	CPU    Value `json:"cpu,omitempty"`
	Memory Value `json:"memory,omitempty"`
}

// QoS classes, as Kubernetes names them.
const (
	QoSGuaranteed = "Guaranteed"
	QoSBurstable  = "Burstable"
	QoSBestEffort = "BestEffort"
)

// Pod is a lane's resolved Kubernetes resources: millicores and bytes, zero
// for not set. Requests left out where a limit is given are the limit, as
// the API server defaults them.
type Pod struct {
	RequestMilliCPU int64 `json:"request_millicpu,omitempty"`
	LimitMilliCPU   int64 `json:"limit_millicpu,omitempty"`
	RequestMemory   int64 `json:"request_memory,omitempty"`
	LimitMemory     int64 `json:"limit_memory,omitempty"`
	// QoS is the class Kubernetes gives a pod of this one container.
	QoS string `json:"qos"`
	// On a node with the static CPU manager (placeExclusive): the CPUs
	// the pod has to itself, or how many it shares with the other pods
	// while one has CPUs of its own, and the cpuset the model places it
	// on.
	ExclusiveCPUs int    `json:"exclusive_cpus,omitempty"`
	SharedCPUs    int    `json:"shared_cpus,omitempty"`
	Cpuset        string `json:"cpuset,omitempty"`
}

// The kernel's bounds on cpu.shares, which kubelet applies too.
const (
	MinShares = 2
	MaxShares = 262144
)

// SharesOf is the cpu.shares kubelet gives a CPU request
// (MilliCPUToShares): 2 for none.
func SharesOf(milliCPU int64) int64 {
	if milliCPU == 0 {
		return MinShares
	}
	return min(max(milliCPU*1024/1000, MinShares), MaxShares)
}

// ResolvePod parses a lane's Kubernetes resources. Errors carry only the
// field ("resources.limits.cpu").
func ResolvePod(pr PodResources, host Host) (Pod, Errors) {
	var p Pod
	var errs Errors
	quantity := func(field string, v Value, cpu bool) int64 {
		if v == "" {
			return 0
		}
		if len(v) > maxValueLen {
			errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf("at most %d characters, got %d", maxValueLen, len(v))})
			return 0
		}
		q, err := resource.ParseQuantity(string(v))
		if err != nil {
			errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf("%q is not a Kubernetes quantity (e.g. \"500m\", \"1\", \"64Mi\"): %v", v, err)})
			return 0
		}
		if q.Sign() <= 0 {
			errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf("must be more than zero, got %q", v)})
			return 0
		}
		if cpu {
			m := q.MilliValue()
			switch {
			case q.ScaledValue(resource.Nano)%1e6 != 0:
				errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf("a CPU quantity is a whole number of millicores, the smallest 1m, got %q", v)})
			case host.NCPU > 0 && m > int64(host.NCPU)*1000:
				errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf("the node has %d CPUs, got %q", host.NCPU, v)})
			}
			return m
		}
		b := q.Value()
		switch {
		case b < MinMemory:
			errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf("must be at least %d MiB, got %q", MinMemory>>20, v)})
		case host.MemTotal > 0 && b > host.MemTotal:
			errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf("the node has %d MiB, got %q", host.MemTotal>>20, v)})
		}
		return b
	}
	p.RequestMilliCPU = quantity("resources.requests.cpu", pr.Requests.CPU, true)
	p.LimitMilliCPU = quantity("resources.limits.cpu", pr.Limits.CPU, true)
	p.RequestMemory = quantity("resources.requests.memory", pr.Requests.Memory, false)
	p.LimitMemory = quantity("resources.limits.memory", pr.Limits.Memory, false)
	if len(errs) > 0 {
		return Pod{}, errs
	}
	// The API server's rules: a request left out is the limit, and a
	// request may not exceed its limit.
	if p.RequestMilliCPU == 0 {
		p.RequestMilliCPU = p.LimitMilliCPU
	}
	if p.RequestMemory == 0 {
		p.RequestMemory = p.LimitMemory
	}
	if p.LimitMilliCPU > 0 && p.RequestMilliCPU > p.LimitMilliCPU {
		errs = append(errs, FieldError{Field: "resources.requests.cpu", Message: fmt.Sprintf("must be less than or equal to the cpu limit (%q)", pr.Limits.CPU)})
	}
	if p.LimitMemory > 0 && p.RequestMemory > p.LimitMemory {
		errs = append(errs, FieldError{Field: "resources.requests.memory", Message: fmt.Sprintf("must be less than or equal to the memory limit (%q)", pr.Limits.Memory)})
	}
	p.QoS = qosOf(p)
	return p, errs
}

// defaultMemory gives a pod with no memory limit the server's default (def,
// none if zero), keeping its QoS class: a BestEffort pod is one on
// purpose and stays one, and a Burstable pod whose memory request the API
// server would default to the new limit, which could make it Guaranteed,
// gets a request of its own below the limit.
func (p *Pod) defaultMemory(def int64) {
	if def <= 0 || p.LimitMemory > 0 || p.QoS == QoSBestEffort {
		return
	}
	class := p.QoS
	p.LimitMemory = max(def, p.RequestMemory)
	if p.RequestMemory == 0 {
		p.RequestMemory = p.LimitMemory
		if qosOf(*p) != class {
			p.RequestMemory = MinMemory
		}
	}
	if qosOf(*p) != class {
		p.LimitMemory = p.RequestMemory + def
	}
	p.QoS = qosOf(*p)
}

func qosOf(p Pod) string {
	switch {
	case p.RequestMilliCPU == 0 && p.RequestMemory == 0 && p.LimitMilliCPU == 0 && p.LimitMemory == 0:
		return QoSBestEffort
	case p.LimitMilliCPU > 0 && p.LimitMemory > 0 && p.RequestMilliCPU == p.LimitMilliCPU && p.RequestMemory == p.LimitMemory:
		return QoSGuaranteed
	}
	return QoSBurstable
}

// Resources are what the pod's resources do to its cgroup, in the Docker
// engine's terms: the allotment model predicts from these, and a Docker
// engine applies them (a memory request is the scheduler's alone and has
// no cgroup file on cgroup v1).
func (p Pod) Resources() Resources {
	r := Resources{CPUShares: SharesOf(p.RequestMilliCPU), Memory: p.LimitMemory, CpusetCpus: p.Cpuset}
	if p.LimitMilliCPU > 0 && p.ExclusiveCPUs == 0 {
		// CPUs of its own come without a quota.
		r.NanoCPUs = p.LimitMilliCPU * 1e6
	}
	return r
}

// PodOf translates a lane's Docker limits to Kubernetes resources where the
// translation is exact (--cpus to limits.cpu, --memory to limits.memory,
// --cpu-shares to requests.cpu of shares/1024 CPUs); it names each flag it
// cannot translate, and why. The flags Kubernetes has no word for at all
// are refused before (Host.Unsupported).
func PodOf(r Resources) (Pod, Errors) {
	var p Pod
	var errs Errors
	if r.NanoCPUs > 0 {
		if r.NanoCPUs%1e6 != 0 {
			errs = append(errs, FieldError{Field: "cpus", Message: fmt.Sprintf("a pod's CPU limit is in millicores: %.4g CPUs is not a whole number of them", float64(r.NanoCPUs)/1e9)})
		}
		p.LimitMilliCPU = r.NanoCPUs / 1e6
	}
	if r.CPUQuota > 0 {
		// The node's period is 100 ms: only the quota is the pod's.
		if r.CPUQuota%100 != 0 {
			errs = append(errs, FieldError{Field: "cpu-quota", Message: fmt.Sprintf("a pod's CPU limit is in millicores, a quota of %d µs per 100 ms is not a whole number of them", r.CPUQuota)})
		}
		p.LimitMilliCPU = r.CPUQuota / 100
	}
	if r.CPUShares > 0 {
		m := r.CPUShares * 1000 / 1024
		if SharesOf(m) != r.CPUShares {
			m2 := m + 1
			errs = append(errs, FieldError{Field: "cpu-shares", Message: fmt.Sprintf("kubelet gives a CPU request of n millicores n×1024/1000 shares: %d shares is no request (%dm gives %d, %dm gives %d)", r.CPUShares, m, SharesOf(m), m2, SharesOf(m2))})
		}
		p.RequestMilliCPU = m
	}
	p.LimitMemory = r.Memory
	if p.RequestMilliCPU == 0 {
		p.RequestMilliCPU = p.LimitMilliCPU
	}
	p.RequestMemory = p.LimitMemory
	if p.LimitMilliCPU > 0 && p.RequestMilliCPU > p.LimitMilliCPU {
		errs = append(errs, FieldError{Field: "cpu-shares", Message: "a pod's CPU request (shares/1024) may not be more than its limit (--cpus)"})
	}
	p.QoS = qosOf(p)
	return p, errs
}

// KubernetesUnsupported are the Docker flags a pod has no word for, with
// the reason: a Kubernetes engine refuses them.
var KubernetesUnsupported = map[string]string{
	"cpuset-cpus":         "a pod cannot name its CPUs; the static CPU manager gives a Guaranteed pod with whole CPUs an exclusive set",
	"cpu-period":          "the period is the node's (kubelet's cpuCFSQuotaPeriod), not a pod's",
	"memory-swap":         "a pod's swap is the node's swap behaviour, not a limit of its own",
	"memory-reservation":  "a memory request is for the scheduler; it writes no soft limit",
	"pids-limit":          "the PID limit is the node's (kubelet's podPidsLimit), not a pod's",
	"device-read-bps":     "Kubernetes has no block IO throttle for a pod",
	"device-write-bps":    "Kubernetes has no block IO throttle for a pod",
	"device-read-iops":    "Kubernetes has no block IO throttle for a pod",
	"device-write-iops":   "Kubernetes has no block IO throttle for a pod",
	"blkio-weight":        "Kubernetes has no block IO weight for a pod",
	"blkio-weight-device": "Kubernetes has no block IO weight for a pod",
}

// Text is a pod's resources as its YAML gives them: "requests cpu 500m,
// memory 32Mi; limits none".
func (p Pod) Text() string {
	list := func(cpu, mem int64) string {
		var parts []string
		if cpu > 0 {
			parts = append(parts, "cpu "+resource.NewMilliQuantity(cpu, resource.DecimalSI).String())
		}
		if mem > 0 {
			parts = append(parts, "memory "+resource.NewQuantity(mem, resource.BinarySI).String())
		}
		if len(parts) == 0 {
			return "none"
		}
		return strings.Join(parts, ", ")
	}
	return "requests " + list(p.RequestMilliCPU, p.RequestMemory) + "; limits " + list(p.LimitMilliCPU, p.LimitMemory)
}
