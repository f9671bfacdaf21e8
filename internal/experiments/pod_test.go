package experiments

import (
	"math"
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/experiments/kernelfiles"
	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

func TestResolvePod(t *testing.T) {
	host := specs.Host{NCPU: 2, MemTotal: 8 << 30}
	for _, c := range []struct {
		name string
		pr   specs.PodResources
		want specs.Pod
	}{
		{"guaranteed by limits alone", specs.PodResources{Limits: specs.PodResourceList{CPU: "500m", Memory: "64Mi"}},
			specs.Pod{RequestMilliCPU: 500, LimitMilliCPU: 500, RequestMemory: 64 << 20, LimitMemory: 64 << 20, QoS: specs.QoSGuaranteed}},
		{"burstable", specs.PodResources{Requests: specs.PodResourceList{CPU: "250m", Memory: "32Mi"}, Limits: specs.PodResourceList{CPU: "0.5"}},
			specs.Pod{RequestMilliCPU: 250, LimitMilliCPU: 500, RequestMemory: 32 << 20, QoS: specs.QoSBurstable}},
		{"best effort", specs.PodResources{}, specs.Pod{QoS: specs.QoSBestEffort}},
		{"decimal units", specs.PodResources{Requests: specs.PodResourceList{CPU: "1", Memory: "100M"}},
			specs.Pod{RequestMilliCPU: 1000, RequestMemory: 100e6, QoS: specs.QoSBurstable}},
	} {
		got, errs := specs.ResolvePod(c.pr, host)
		if len(errs) > 0 || got != c.want {
			t.Errorf("%s: got %+v %v, want %+v", c.name, got, errs, c.want)
		}
	}
	for _, c := range []struct {
		pr    specs.PodResources
		field string
		says  string
	}{
		{specs.PodResources{Limits: specs.PodResourceList{CPU: "half"}}, "resources.limits.cpu", "not a Kubernetes quantity"},
		{specs.PodResources{Limits: specs.PodResourceList{CPU: "3"}}, "resources.limits.cpu", "the node has 2 CPUs"},
		{specs.PodResources{Requests: specs.PodResourceList{CPU: "0.1m"}}, "resources.requests.cpu", "whole number of millicores"},
		{specs.PodResources{Requests: specs.PodResourceList{CPU: "600m"}, Limits: specs.PodResourceList{CPU: "500m"}}, "resources.requests.cpu", "less than or equal"},
		{specs.PodResources{Limits: specs.PodResourceList{Memory: "-1Mi"}}, "resources.limits.memory", "more than zero"},
		{specs.PodResources{Limits: specs.PodResourceList{Memory: "1Ki"}}, "resources.limits.memory", "at least"},
		{specs.PodResources{Limits: specs.PodResourceList{Memory: specs.Value(strings.Repeat("9", 100))}}, "resources.limits.memory", "at most"},
	} {
		_, errs := specs.ResolvePod(c.pr, host)
		if len(errs) != 1 || errs[0].Field != c.field || !strings.Contains(errs[0].Message, c.says) {
			t.Errorf("%+v: got %v, want one error on %s saying %q", c.pr, errs, c.field, c.says)
		}
	}
}

func TestSharesOfMatchesKubelet(t *testing.T) {
	// pkg/kubelet/cm's MilliCPUToShares: 2 at least, milli×1024/1000.
	for m, want := range map[int64]int64{0: 2, 1: 2, 250: 256, 500: 512, 1000: 1024, 1500: 1536, 300000: 262144} {
		if got := specs.SharesOf(m); got != want {
			t.Errorf("SharesOf(%d) = %d, want %d", m, got, want)
		}
	}
}

// A Docker-flag lane on a Kubernetes engine is translated where that is
// exact, and refused naming the flag where it is not, or where Kubernetes
// has no word for it.
func TestDockerFlagsOnKubernetes(t *testing.T) {
	host := specs.Host{NCPU: 2, MemTotal: 8 << 30, Kubernetes: true, Unsupported: specs.KubernetesUnsupported}
	spin := specs.Workload{Kind: specs.KindSpin, Threads: 1}
	plan, errs := Validate(specs.Spec{Lanes: []specs.Lane{
		{Name: "a", Workload: spin, Limits: specs.Limits{CPUs: "0.5", Memory: "64m", CPUShares: "512"}},
		{Name: "b", Workload: spin},
	}}, host)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	a, b := plan.Lanes[0], plan.Lanes[1]
	if a.Pod == nil || *a.Pod != (specs.Pod{RequestMilliCPU: 500, LimitMilliCPU: 500, RequestMemory: 64 << 20, LimitMemory: 64 << 20, QoS: specs.QoSGuaranteed}) {
		t.Errorf("lane a's pod: %+v", a.Pod)
	}
	if b.Pod == nil || b.Pod.QoS != specs.QoSBestEffort || b.Resources.CPUShares != 2 {
		t.Errorf("lane b: pod %+v, shares %d; want BestEffort with kubelet's 2 shares", b.Pod, b.Resources.CPUShares)
	}
	for _, c := range []struct {
		limits specs.Limits
		field  string
		says   string
	}{
		{specs.Limits{CPUs: "0.0005"}, "cpus", ""}, // below the engine's floor
		{specs.Limits{CPUs: "0.0125"}, "cpus", "millicores"},
		{specs.Limits{CPUShares: "100"}, "cpu-shares", "no request"},
		{specs.Limits{CPUPeriod: "50000"}, "cpu-period", "node's"},
		{specs.Limits{DeviceWriteBps: "auto:5mb"}, "device-write-bps", "no block IO throttle"},
		{specs.Limits{BlkioWeight: "300"}, "blkio-weight", "no block IO weight"},
		{specs.Limits{MemorySwap: "128m", Memory: "64m"}, "memory-swap", "swap"},
		{specs.Limits{PidsLimit: "64"}, "pids-limit", "podPidsLimit"},
	} {
		_, errs := Validate(specs.Spec{Lanes: []specs.Lane{{Workload: spin, Limits: c.limits}}}, host)
		if len(errs) != 1 || errs[0].Lane != 0 || errs[0].Field != c.field || !strings.Contains(errs[0].Message, c.says) {
			t.Errorf("%+v: got %v, want one error on lane 0's %s saying %q", c.limits, errs, c.field, c.says)
		}
	}
	// Both ways of saying it at once is refused.
	_, errs = Validate(specs.Spec{Lanes: []specs.Lane{{Workload: spin, Limits: specs.Limits{CPUs: "1"}, Resources: &specs.PodResources{}}}}, host)
	if len(errs) != 1 || errs[0].Field != "resources" {
		t.Errorf("limits and resources: %v", errs)
	}
}

// Kubernetes resources on a Docker engine are the cgroup settings they
// make, and the model predicts from them.
func TestPodResourcesOnDocker(t *testing.T) {
	plan, errs := Validate(specs.Spec{Lanes: []specs.Lane{{Workload: specs.Workload{Kind: specs.KindSpin, Threads: 1},
		Resources: &specs.PodResources{Requests: specs.PodResourceList{CPU: "250m"}, Limits: specs.PodResourceList{CPU: "500m", Memory: "64Mi"}}}}},
		specs.Host{NCPU: 2})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	r := plan.Lanes[0].Resources
	if r.CPUShares != 256 || r.NanoCPUs != 5e8 || r.Memory != 64<<20 {
		t.Errorf("resources %+v, want shares 256, 0.5 CPUs, 64 MiB", r)
	}
}

// The QoS lab's prediction: the Guaranteed pod at its limit, the Burstable
// one with the rest, the BestEffort one starved by its 2 shares; its
// verdict judges the starved lane on the StarvedRatio scale.
func TestQoSContentionPrediction(t *testing.T) {
	lab, ok := LabByID("k8s-qos-contention")
	if !ok {
		t.Fatal("no lab k8s-qos-contention")
	}
	host := specs.Host{NCPU: 2, Kubernetes: true, Unsupported: specs.KubernetesUnsupported}
	plan, errs := Validate(lab.LabSpec(), host)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var qos []string
	for _, l := range plan.Lanes {
		qos = append(qos, l.Pod.QoS)
	}
	if strings.Join(qos, " ") != "Guaranteed Burstable BestEffort" {
		t.Errorf("QoS classes %v", qos)
	}
	p := models.Predict(plan, models.ModelHost{NCPU: 2}, make([]models.LaneOutcome, len(plan.Lanes)), nil)
	g := p.Together
	if len(g) != 3 || math.Abs(g[0]-1) > 0.01 || math.Abs(g[1]-0.996) > 0.01 || g[2] > 0.01 {
		t.Errorf("allotment %v, want about 1, 0.996 and 0.004 cores", g)
	}
}

// runc's two cpu.weight formulas meet at their ends; the newer one puts a
// request of one CPU (1024 shares) at the kernel's default weight.
func TestWeightFormulas(t *testing.T) {
	for _, c := range []struct{ shares, linear, quadratic int64 }{
		{2, 1, 1}, {1024, 39, 100}, {262144, 10000, 10000},
	} {
		if got := kernelfiles.WeightLinear(c.shares); got != c.linear {
			t.Errorf("linear(%d) = %d, want %d", c.shares, got, c.linear)
		}
		if got := kernelfiles.WeightQuadratic(c.shares); got != c.quadratic {
			t.Errorf("quadratic(%d) = %d, want %d", c.shares, got, c.quadratic)
		}
	}
	for s := int64(3); s < specs.MaxShares; s += 97 {
		if kernelfiles.WeightQuadratic(s) < kernelfiles.WeightQuadratic(s-97+1) {
			t.Fatalf("quadratic weight falls at %d shares", s)
		}
	}
}

// A pod's kernel files, in Kubernetes' words: the request as shares (or
// either v2 weight), the limit as a quota, none as -1 or max.
func TestPodKernelFiles(t *testing.T) {
	burst := specs.Pod{RequestMilliCPU: 500, RequestMemory: 32 << 20, QoS: specs.QoSBurstable}
	got := map[string]string{}
	for _, f := range kernelfiles.PodKernelFiles(burst, false) {
		got[f.Flag+" "+f.Value+" "+f.File] = f.Want
	}
	want := map[string]string{
		"requests.cpu 500m cpu.shares":             "512",
		"limits.cpu none cpu.cfs_quota_us":         "-1",
		"limits.cpu none cpu.cfs_period_us":        "100000",
		"limits.memory none memory.limit_in_bytes": kernelfiles.V1Unlimited,
	}
	if len(got) != len(want) {
		t.Errorf("v1 files %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("v1 %s: want %q, got %q", k, v, got[k])
		}
	}
	guaranteed := specs.Pod{RequestMilliCPU: 1000, LimitMilliCPU: 1000, RequestMemory: 64 << 20, LimitMemory: 64 << 20, QoS: specs.QoSGuaranteed}
	var weights []string
	for _, f := range kernelfiles.PodKernelFiles(guaranteed, true) {
		switch f.File {
		case "cpu.weight":
			if !f.Either || f.Formula == "" {
				t.Errorf("v2 weight row %+v: want one of two formulas", f)
			}
			weights = append(weights, f.Want)
		case "cpu.max":
			if f.Want != "100000 100000" || f.Value != "1" {
				t.Errorf("cpu.max %+v", f)
			}
		case "memory.max":
			if f.Want != "67108864" || f.Value != "64Mi" {
				t.Errorf("memory.max %+v", f)
			}
		default:
			t.Errorf("unexpected v2 file %+v", f)
		}
	}
	if len(weights) != 2 || weights[0] != "39" || weights[1] != "100" {
		t.Errorf("v2 weights %v, want 39 (linear) and 100 (quadratic)", weights)
	}
}

// TestDefaultMemory: a lane that sets no memory limit gets the server's
// default, on Docker and as a pod, and a pod keeps its QoS class.
func TestDefaultMemory(t *testing.T) {
	const def = 512 << 20
	docker := specs.Host{NCPU: 2, DefaultMemory: def}
	kube := specs.Host{NCPU: 2, DefaultMemory: def, Kubernetes: true}
	for _, tc := range []struct {
		name    string
		lane    string
		host    specs.Host
		limit   int64
		request int64
		qos     string
	}{
		{"an http lane on Docker", `{"workload": {"kind": "http", "work_us": 1000}}`, docker, def, 0, ""},
		{"its own --memory", `{"workload": {"kind": "http", "work_us": 1000}, "limits": {"memory": "64m"}}`, docker, 64 << 20, 0, ""},
		{"a reservation above the default", `{"workload": {"kind": "spin", "seconds": 1}, "limits": {"memory-reservation": "1g"}}`, docker, 1 << 30, 0, ""},
		{"--cpus as a pod stays Burstable", `{"workload": {"kind": "spin", "seconds": 1}, "limits": {"cpus": "0.5"}}`, kube, def, specs.MinMemory, specs.QoSBurstable},
		{"a request only", `{"workload": {"kind": "spin", "seconds": 1}, "resources": {"requests": {"cpu": "250m"}}}`, kube, def, def, specs.QoSBurstable},
		{"a memory request above the default, CPU limit", `{"workload": {"kind": "spin", "seconds": 1}, "resources": {"requests": {"memory": "1Gi"}, "limits": {"cpu": "1"}}}`, kube, 1<<30 + def, 1 << 30, specs.QoSBurstable},
		{"BestEffort on purpose", `{"workload": {"kind": "spin", "seconds": 1}, "resources": {}}`, kube, 0, 0, specs.QoSBestEffort},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, errs := Parse([]byte(`{"lanes": [` + tc.lane + `]}`))
			if errs != nil {
				t.Fatal(errs)
			}
			plan, errs := Validate(spec, tc.host)
			if errs != nil {
				t.Fatal(errs)
			}
			l := plan.Lanes[0]
			if l.Resources.Memory != tc.limit {
				t.Errorf("memory limit %d, want %d", l.Resources.Memory, tc.limit)
			}
			if l.Pod != nil && (l.Pod.RequestMemory != tc.request || l.Pod.QoS != tc.qos) {
				t.Errorf("pod %+v, want a memory request of %d and class %s", *l.Pod, tc.request, tc.qos)
			}
		})
	}
}

// TestALoadTargetsItsServiceAtAnAddress: a load's -target is built by wire
// from its service's address, on loopback by default, or at a pod's.
func TestALoadTargetsItsServiceAtAnAddress(t *testing.T) {
	w := specs.Workload{Kind: specs.KindLoad, Port: 9090}
	for host, want := range map[string]string{"": "http://127.0.0.1:9090/", "10.246.0.7": "http://10.246.0.7:9090/", "fd00::7": "http://[fd00::7]:9090/"} {
		args := w.Args()
		if host != "" {
			args = w.ArgsAt(host)
		}
		if got := strings.Join(args, " "); !strings.Contains(got, "-target "+want) {
			t.Errorf("a load of a service at %q: %s, want -target %s", host, got, want)
		}
	}
}
