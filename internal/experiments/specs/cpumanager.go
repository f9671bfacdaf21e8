package specs

import (
	"fmt"
	"strconv"
)

// CPUManagerPolicy is kubelet's CPU manager policy on a node, as a probe
// pod found it ("" unknown).
type CPUManagerPolicy string

// kubelet's CPU manager policies, as a node's probe finds them.
const (
	// CPUManagerStatic gives a Guaranteed pod with a whole number of CPUs
	// those CPUs to itself (an exclusive cpuset) and, since Kubernetes
	// 1.33 (DisableCPUQuotaWithExclusiveCPUs), no CFS quota; every other
	// pod shares the CPUs left, the shared pool.
	CPUManagerStatic CPUManagerPolicy = "static"
	// CPUManagerNone is the default: every pod may run on every CPU and
	// limits.cpu is a CFS quota.
	CPUManagerNone CPUManagerPolicy = "none"
)

// StaticCPUManager says whether the host is a Kubernetes node whose
// kubelet runs the static CPU manager policy.
func (h Host) StaticCPUManager() bool { return h.Kubernetes && h.CPUManager == CPUManagerStatic }

// Exclusive says whether the static CPU manager gives the pod CPUs of its
// own: a Guaranteed pod whose CPU limit is a whole number of CPUs.
func (p Pod) Exclusive() bool {
	return p.QoS == QoSGuaranteed && p.LimitMilliCPU > 0 && p.LimitMilliCPU%1000 == 0
}

// CPUManagerWhy says why a lab that needs a CPU manager policy cannot run
// on the host.
func CPUManagerWhy(want CPUManagerPolicy, h Host) string {
	if !h.Kubernetes {
		return fmt.Sprintf("the lab needs kubelet's %s CPU manager policy: it runs on a Kubernetes node only", want)
	}
	got := string(h.CPUManager)
	if got == "" {
		got = "unknown"
	}
	why := fmt.Sprintf("the lab needs kubelet's %s CPU manager policy (cpuManagerPolicy: %s, with a CPU reserved); the node's is %s", want, want, got)
	if h.CPUManagerNote != "" {
		why += ": " + h.CPUManagerNote
	}
	return why
}

// placeExclusive places a run's pods as the static CPU manager will: in
// each group of lanes that run together, a Guaranteed pod of whole CPUs
// gets that many CPUs of its own and no quota, and the other pods share
// what is left. The model predicts from these cpusets; which CPUs kubelet
// picks is its own (the kernel view checks how many, and that they are
// not shared). It refuses a group that asks for every CPU: the static
// policy keeps at least one in the shared pool for the reserved CPUs.
func placeExclusive(plan Plan, host Host) Errors {
	if !host.StaticCPUManager() || host.NCPU <= 0 {
		return nil
	}
	var errs Errors
	for _, g := range plan.Groups {
		taken := 0
		var exclusive []int
		for _, i := range g {
			if p := plan.Lanes[i].Pod; p != nil && p.Exclusive() {
				exclusive = append(exclusive, i)
				taken += int(p.LimitMilliCPU / 1000)
			}
		}
		if len(exclusive) == 0 {
			continue
		}
		if taken > host.NCPU-1 {
			errs = append(errs, FieldError{Lane: exclusive[len(exclusive)-1], Field: "resources.limits.cpu", Message: fmt.Sprintf(
				"the static CPU manager keeps at least one of the node's %d CPUs for the shared pool: the Guaranteed pods of whole CPUs running together ask for %d of their own",
				host.NCPU, taken)})
			continue
		}
		next := host.NCPU - 1 // from the top: the reserved CPUs are the lowest
		for _, i := range exclusive {
			p := plan.Lanes[i].Pod
			n := int(p.LimitMilliCPU / 1000)
			p.ExclusiveCPUs = n
			p.Cpuset = cpuRange(next-n+1, next)
			next -= n
			plan.Lanes[i].Resources = p.Resources()
		}
		for _, i := range g {
			if p := plan.Lanes[i].Pod; p != nil && p.ExclusiveCPUs == 0 {
				p.SharedCPUs = next + 1
				p.Cpuset = cpuRange(0, next)
				plan.Lanes[i].Resources = p.Resources()
			}
		}
	}
	return errs
}

func cpuRange(lo, hi int) string {
	if lo == hi {
		return strconv.Itoa(lo)
	}
	return strconv.Itoa(lo) + "-" + strconv.Itoa(hi)
}
