package kernelfiles

import (
	"math"
	"strconv"

	"github.com/limitlab/limitlab/internal/experiments/specs"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Runtime formulas for a CPU request's cpu.weight on cgroup v2. Kubernetes
// gives the runtime shares; runc converts them, and changed how
// (opencontainers/runc#4772): a weight of 100 is 1024 shares in both, but
// the linear formula maps the default request of a core far below the
// kernel's default weight.
const (
	FormulaLinear    = "runc before 1.3.2: 1 + (shares−2)×9999/262142"
	FormulaQuadratic = "runc 1.3.2 and later: 10^((l²+125l)/612 − 7/34), l = log2(shares)"
)

// staticFormula names what the static CPU manager does with a Guaranteed
// pod's whole CPUs.
const staticFormula = "static CPU manager: a Guaranteed pod's whole CPUs are its own, without a quota"

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// WeightQuadratic is cpu.weight from shares by runc's newer formula
// (opencontainers/runc#4772), which puts 1024 shares at the kernel's
// default weight of 100.
func WeightQuadratic(shares int64) int64 {
	switch {
	case shares <= specs.MinShares:
		return 1
	case shares >= specs.MaxShares:
		return 10000
	}
	l := math.Log2(float64(shares))
	return int64(math.Ceil(math.Pow(10, (l*l+125*l)/612-7.0/34)))
}

// WeightLinear is cpu.weight from shares by runc's older formula.
func WeightLinear(shares int64) int64 { return 1 + ((shares-2)*9999)/262142 }

// PodKernelFiles lists the cgroup files a pod's resources write in its
// container's cgroup, in Kubernetes' words: requests.cpu as shares (v2: a
// weight, by either runc formula, whichever the node's runtime uses),
// limits.cpu as a CFS quota over the node's 100 ms period (none without
// a limit), limits.memory as the memory limit. A memory request writes
// nothing: it is the scheduler's.
func PodKernelFiles(p specs.Pod, v2 bool) []KernelFile {
	var out []KernelFile
	add := func(f KernelFile) {
		if v2 {
			f.Controller = ""
		}
		out = append(out, f)
	}
	num := func(n int64) string { return strconv.FormatInt(n, 10) }
	milli := func(m int64) string {
		if m == 0 {
			return "none"
		}
		return resource.NewMilliQuantity(m, resource.DecimalSI).String()
	}

	shares := specs.SharesOf(p.RequestMilliCPU)
	req := milli(p.RequestMilliCPU)
	if v2 {
		lin, quad := WeightLinear(shares), WeightQuadratic(shares)
		add(KernelFile{Flag: "requests.cpu", Value: req, File: "cpu.weight", Want: num(lin), Either: lin != quad, Formula: FormulaLinear})
		if quad != lin {
			add(KernelFile{Flag: "requests.cpu", Value: req, File: "cpu.weight", Want: num(quad), Either: true, Formula: FormulaQuadratic})
		}
	} else {
		add(KernelFile{Flag: "requests.cpu", Value: req, Controller: "cpu", File: "cpu.shares", Want: num(shares)})
	}

	lim := milli(p.LimitMilliCPU)
	quota := int64(-1)
	if p.LimitMilliCPU > 0 && p.ExclusiveCPUs == 0 {
		quota = p.LimitMilliCPU * specs.DefaultCFSPeriod / 1000
	}
	cpuset := func(f KernelFile) {
		f.Controller, f.File = "cpuset", pick(v2, "cpuset.cpus.effective", "cpuset.cpus")
		add(f)
	}
	switch {
	case p.ExclusiveCPUs > 0:
		cpuset(KernelFile{Flag: "limits.cpu", Value: lim, Want: plural(p.ExclusiveCPUs, "CPU") + " of its own", CPUs: p.ExclusiveCPUs, Formula: staticFormula})
	case p.SharedCPUs > 0:
		cpuset(KernelFile{Flag: "cpuManagerPolicy", Value: string(specs.CPUManagerStatic), Want: "the shared pool of " + plural(p.SharedCPUs, "CPU"), CPUs: p.SharedCPUs, Formula: staticFormula})
	}
	if v2 {
		q := "max"
		if quota > 0 {
			q = num(quota)
		}
		add(KernelFile{Flag: "limits.cpu", Value: lim, File: "cpu.max", Want: q + " " + num(specs.DefaultCFSPeriod)})
	} else {
		f := KernelFile{Flag: "limits.cpu", Value: lim, Controller: "cpu", File: "cpu.cfs_quota_us", Want: num(quota)}
		if p.ExclusiveCPUs > 0 {
			f.Formula = staticFormula
		}
		add(f)
		add(KernelFile{Flag: "limits.cpu", Value: lim, Controller: "cpu", File: "cpu.cfs_period_us", Want: num(specs.DefaultCFSPeriod)})
	}

	memWant := pick(v2, "max", V1Unlimited)
	if p.LimitMemory > 0 {
		memWant = num(p.LimitMemory)
	}
	memValue := "none"
	if p.LimitMemory > 0 {
		memValue = resource.NewQuantity(p.LimitMemory, resource.BinarySI).String()
	}
	add(KernelFile{Flag: "limits.memory", Value: memValue, Controller: "memory", File: pick(v2, "memory.max", "memory.limit_in_bytes"), Want: memWant})
	return out
}

// LaneKernelFiles are the files a lane's limits write: in Kubernetes' words
// for a pod, else in Docker's.
func LaneKernelFiles(applied specs.Resources, pod *specs.Pod, v2 bool, devices map[string]string) []KernelFile {
	if pod != nil {
		return PodKernelFiles(*pod, v2)
	}
	return KernelFiles(applied, v2, devices)
}
