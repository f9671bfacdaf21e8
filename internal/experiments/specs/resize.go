package specs

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// ResizeFields are the Docker flags a pod lane's live change takes, each
// the one Kubernetes resource it translates to exactly (PodOf): --cpus
// is limits.cpu, --cpu-shares requests.cpu, --memory limits.memory. A
// change in Kubernetes' own words goes in Limits.Resources.
var ResizeFields = []string{"cpus", "cpu-shares", "memory", "resources"}

// ResolveResize checks a live change of a running pod lane's resources
// against its current ones (cur, as kubelet applied them) and returns the
// pod it asks for: what a resize through the pod's resize subresource
// would make it. It refuses, saying why, what kubelet and the API server
// refuse: a change of the pod's QoS class, and any resize of a pod with
// CPUs of its own under the static CPU manager.
func ResolveResize(cur Pod, change Limits, host Host) (Pod, Errors) {
	var errs Errors
	add := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	docker := change
	docker.Resources = nil
	if docker.CpusetCpus != "" {
		add("cpuset-cpus", "a pod cannot name its CPUs: %s", KubernetesUnsupported["cpuset-cpus"])
	}
	for field, v := range map[string]Value{
		"cpu-period": change.CPUPeriod, "cpu-quota": change.CPUQuota, "memory-swap": change.MemorySwap,
		"memory-reservation": change.MemoryReservation, "pids-limit": change.PidsLimit,
		"device-read-bps": change.DeviceReadBps, "device-write-bps": change.DeviceWriteBps,
		"device-read-iops": change.DeviceReadIOps, "device-write-iops": change.DeviceWriteIOps,
		"blkio-weight": change.BlkioWeight, "blkio-weight-device": change.BlkioWeightDevice,
	} {
		if v != "" {
			add(field, "a pod's resize changes only %v: %s", ResizeFields, KubernetesUnsupported[field])
		}
	}
	if change.Resources != nil && docker != (Limits{}) {
		add("resources", "give Docker flags or Kubernetes resources, not both")
	}
	if change.Resources == nil && docker == (Limits{}) {
		add("limits", "no change: give at least one of %v", ResizeFields)
	}
	if cur.ExclusiveCPUs > 0 {
		add("resources", "kubelet's static CPU manager does not resize a Guaranteed pod with CPUs of its own (%d): its CPUs stay as the pod started", cur.ExclusiveCPUs)
	}
	if cur.QoS == QoSBestEffort {
		add("resources", "a BestEffort pod has no resources to resize: any request or limit would make it Burstable, and kubelet keeps a pod's QoS class")
	}
	if len(errs) > 0 {
		return Pod{}, errs
	}
	want := cur.Requested()
	if change.Resources != nil {
		want = want.with(*change.Resources)
	} else {
		d, derrs := ResolveLimits(Limits{CPUs: change.CPUs, CPUShares: change.CPUShares, Memory: change.Memory}, host)
		if len(derrs) > 0 {
			return Pod{}, derrs
		}
		p, perrs := PodOf(Resources{NanoCPUs: d.NanoCPUs, CPUShares: d.CPUShares})
		if len(perrs) > 0 {
			return Pod{}, perrs
		}
		if change.CPUs != "" {
			want.Limits.CPU = Milli(p.LimitMilliCPU)
		}
		if change.CPUShares != "" {
			want.Requests.CPU = Milli(p.RequestMilliCPU)
		}
		if change.Memory != "" {
			want.Limits.Memory = bytesQ(d.Memory)
		}
	}
	next, perrs := ResolvePod(want, host)
	if len(perrs) > 0 {
		return Pod{}, perrs
	}
	if next.QoS != cur.QoS {
		return Pod{}, Errors{{Field: "resources", Message: fmt.Sprintf(
			"kubelet keeps a pod's QoS class: this change would make the %s pod %s (requests %s, limits %s); change requests and limits together",
			cur.QoS, next.QoS, next.Requested().Requests, next.Requested().Limits)}}
	}
	if next.RequestMilliCPU == cur.RequestMilliCPU && next.LimitMilliCPU == cur.LimitMilliCPU &&
		next.RequestMemory == cur.RequestMemory && next.LimitMemory == cur.LimitMemory {
		return Pod{}, Errors{{Field: "resources", Message: fmt.Sprintf("no change: the pod already has requests %s, limits %s", next.Requested().Requests, next.Requested().Limits)}}
	}
	return next, nil
}

// ResizeWant is what a resize's quantities do to a pod's cgroup, in the
// Docker engine's terms (Pod.Resources), for the fields it sets: a guided
// step's change is made once the lane's limits include these.
func ResizeWant(pr PodResources) Resources {
	var r Resources
	q := func(v Value) *resource.Quantity {
		if v == "" {
			return nil
		}
		p, err := resource.ParseQuantity(string(v))
		if err != nil {
			return nil
		}
		return &p
	}
	if c := q(pr.Limits.CPU); c != nil {
		r.NanoCPUs = c.MilliValue() * 1e6
	}
	if c := q(pr.Requests.CPU); c != nil {
		r.CPUShares = SharesOf(c.MilliValue())
	}
	if m := q(pr.Limits.Memory); m != nil {
		r.Memory = m.Value()
	}
	return r
}

// Requested is the pod's resources in Kubernetes' words, every request
// and limit it has written out: millicores and bytes.
func (p Pod) Requested() PodResources {
	var r PodResources
	if p.RequestMilliCPU > 0 {
		r.Requests.CPU = Milli(p.RequestMilliCPU)
	}
	if p.LimitMilliCPU > 0 {
		r.Limits.CPU = Milli(p.LimitMilliCPU)
	}
	if p.RequestMemory > 0 {
		r.Requests.Memory = bytesQ(p.RequestMemory)
	}
	if p.LimitMemory > 0 {
		r.Limits.Memory = bytesQ(p.LimitMemory)
	}
	return r
}

// with is r with every quantity change sets.
func (r PodResources) with(change PodResources) PodResources {
	set := func(to *Value, v Value) {
		if v != "" {
			*to = v
		}
	}
	set(&r.Requests.CPU, change.Requests.CPU)
	set(&r.Requests.Memory, change.Requests.Memory)
	set(&r.Limits.CPU, change.Limits.CPU)
	set(&r.Limits.Memory, change.Limits.Memory)
	return r
}

func Milli(m int64) Value {
	return Value(resource.NewMilliQuantity(m, resource.DecimalSI).String())
}

func bytesQ(b int64) Value { return Value(resource.NewQuantity(b, resource.BinarySI).String()) }

// String is the list as a person writes it: {cpu: 500m, memory: 64Mi}.
func (l PodResourceList) String() string {
	s := "{"
	if l.CPU != "" {
		s += "cpu: " + string(l.CPU)
	}
	if l.Memory != "" {
		if l.CPU != "" {
			s += ", "
		}
		s += "memory: " + string(l.Memory)
	}
	return s + "}"
}

// PodContainer is the name of a lane pod's one container.
const PodContainer = "workload"

// ResizePatch is the strategic merge patch of a lane pod's one container
// (named container) that asks for to's resources: every request and limit
// of CPU and memory written out, so that the merge leaves none as it was.
func ResizePatch(container string, to Pod) []byte {
	return ResourcesPatch(container, to.Requested())
}

// ResourcesPatch is the strategic merge patch of container's resources
// to r.
func ResourcesPatch(container string, r PodResources) []byte {
	list := func(l PodResourceList) map[string]string {
		m := map[string]string{}
		if l.CPU != "" {
			m["cpu"] = string(l.CPU)
		}
		if l.Memory != "" {
			m["memory"] = string(l.Memory)
		}
		return m
	}
	res := map[string]any{}
	if l := list(r.Requests); len(l) > 0 {
		res["requests"] = l
	}
	if l := list(r.Limits); len(l) > 0 {
		res["limits"] = l
	}
	b, _ := json.Marshal(map[string]any{"spec": map[string]any{"containers": []map[string]any{{"name": container, "resources": res}}}})
	return b
}

// ResizeCommand is the kubectl command that asks the same resize of pod.
func ResizeCommand(pod, container string, to Pod) string {
	return fmt.Sprintf("kubectl patch pod %s --subresource resize --patch '%s'", pod, ResizePatch(container, to))
}
