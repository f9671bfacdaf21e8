package experiments

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/experiments/specs"
)

var twoCPUs = specs.Host{NCPU: 2}

func lane(limits specs.Limits) specs.Spec {
	return specs.Spec{Name: "t", Lanes: []specs.Lane{{Name: "a", Workload: specs.Workload{Kind: specs.KindMD5, MB: 10}, Limits: limits}}}
}

func TestValidateLimits(t *testing.T) {
	tests := []struct {
		name   string
		limits specs.Limits
		host   specs.Host
		want   specs.Resources // checked when wantErr is empty
		field  string          // the field the error must name
		msg    string          // a part of the message
	}{
		{name: "no limits", want: specs.Resources{PidsLimit: specs.DefaultPidsLimit}},
		{name: "cpus half", limits: specs.Limits{CPUs: "0.5"}, want: specs.Resources{NanoCPUs: 5e8, PidsLimit: specs.DefaultPidsLimit}},
		{name: "cpus leading dot", limits: specs.Limits{CPUs: ".25"}, want: specs.Resources{NanoCPUs: 25e7, PidsLimit: specs.DefaultPidsLimit}},
		{name: "cpus all", limits: specs.Limits{CPUs: "2"}, want: specs.Resources{NanoCPUs: 2e9, PidsLimit: specs.DefaultPidsLimit}},
		{name: "cpus floor", limits: specs.Limits{CPUs: "0.01"}, want: specs.Resources{NanoCPUs: 1e7, PidsLimit: specs.DefaultPidsLimit}},
		{name: "cpus below floor", limits: specs.Limits{CPUs: "0.001"}, field: "cpus", msg: "Range of CPUs is from 0.01 to 2.00"},
		{name: "cpus above host", limits: specs.Limits{CPUs: "3"}, field: "cpus", msg: "as there are only 2 CPUs available"},
		{name: "cpus not a number", limits: specs.Limits{CPUs: "half"}, field: "cpus", msg: "failed to parse half as a rational number"},
		{name: "cpus too precise", limits: specs.Limits{CPUs: "0.0000000001"}, field: "cpus", msg: "too precise"},
		{name: "cpus and period conflict", limits: specs.Limits{CPUs: "1", CPUPeriod: "100000"}, field: "cpus", msg: "Nano CPUs and CPU Period cannot both be set"},
		{name: "cpus and quota conflict", limits: specs.Limits{CPUs: "1", CPUQuota: "50000"}, field: "cpus", msg: "Nano CPUs and CPU Quota cannot both be set"},
		{name: "quota and period", limits: specs.Limits{CPUQuota: "50000", CPUPeriod: "100000"}, want: specs.Resources{CPUQuota: 50000, CPUPeriod: 100000, PidsLimit: specs.DefaultPidsLimit}},
		{name: "period too short", limits: specs.Limits{CPUPeriod: "999"}, field: "cpu-period", msg: "can not be less than 1ms (i.e. 1000) or larger than 1s"},
		{name: "period too long", limits: specs.Limits{CPUPeriod: "1000001"}, field: "cpu-period", msg: "larger than 1s (i.e. 1000000)"},
		{name: "period bounds", limits: specs.Limits{CPUPeriod: "1000", CPUQuota: "1000"}, want: specs.Resources{CPUPeriod: 1000, CPUQuota: 1000, PidsLimit: specs.DefaultPidsLimit}},
		{name: "quota too small", limits: specs.Limits{CPUQuota: "999"}, field: "cpu-quota", msg: "CPU cfs quota can not be less than 1ms (i.e. 1000)"},
		{name: "shares", limits: specs.Limits{CPUShares: "512"}, want: specs.Resources{CPUShares: 512, PidsLimit: specs.DefaultPidsLimit}},
		{name: "shares too small", limits: specs.Limits{CPUShares: "1"}, field: "cpu-shares", msg: "from 2 to 262144"},
		{name: "shares not a number", limits: specs.Limits{CPUShares: "lots"}, field: "cpu-shares", msg: "whole number"},
		{name: "cpuset", limits: specs.Limits{CpusetCpus: "0,1"}, want: specs.Resources{CpusetCpus: "0,1", PidsLimit: specs.DefaultPidsLimit}},
		{name: "cpuset range", limits: specs.Limits{CpusetCpus: "0-1"}, want: specs.Resources{CpusetCpus: "0-1", PidsLimit: specs.DefaultPidsLimit}},
		{name: "cpuset beyond host", limits: specs.Limits{CpusetCpus: "0,2"}, field: "cpuset-cpus", msg: "Requested CPUs are not available - requested 0,2, available: 0-1"},
		{name: "cpuset malformed", limits: specs.Limits{CpusetCpus: "1-0"}, field: "cpuset-cpus", msg: "Invalid value 1-0 for cpuset cpus"},
		{name: "memory", limits: specs.Limits{Memory: "64m"}, want: specs.Resources{Memory: 64 << 20, PidsLimit: specs.DefaultPidsLimit}},
		{name: "memory in bytes", limits: specs.Limits{Memory: "6291456"}, want: specs.Resources{Memory: 6 << 20, PidsLimit: specs.DefaultPidsLimit}},
		{name: "memory below 6MB", limits: specs.Limits{Memory: "5m"}, field: "memory", msg: "Minimum memory limit allowed is 6MB"},
		{name: "memory malformed", limits: specs.Limits{Memory: "lots"}, field: "memory", msg: "invalid size: 'lots'"},
		{name: "swap", limits: specs.Limits{Memory: "64m", MemorySwap: "128m"}, want: specs.Resources{Memory: 64 << 20, MemorySwap: 128 << 20, PidsLimit: specs.DefaultPidsLimit}},
		{name: "swap unlimited", limits: specs.Limits{Memory: "64m", MemorySwap: "-1"}, want: specs.Resources{Memory: 64 << 20, MemorySwap: -1, PidsLimit: specs.DefaultPidsLimit}},
		{name: "swap below memory", limits: specs.Limits{Memory: "64m", MemorySwap: "32m"}, field: "memory-swap", msg: "should be larger than memory limit"},
		{name: "swap without memory", limits: specs.Limits{MemorySwap: "128m"}, field: "memory-swap", msg: "always set the Memory limit"},
		{name: "reservation", limits: specs.Limits{Memory: "64m", MemoryReservation: "32m"}, want: specs.Resources{Memory: 64 << 20, MemoryReservation: 32 << 20, PidsLimit: specs.DefaultPidsLimit}},
		{name: "reservation above memory", limits: specs.Limits{Memory: "64m", MemoryReservation: "128m"}, field: "memory-reservation", msg: "can not be less than memory reservation limit"},
		{name: "reservation below 6MB", limits: specs.Limits{MemoryReservation: "1m"}, field: "memory-reservation", msg: "6MB"},
		{name: "pids", limits: specs.Limits{PidsLimit: "64"}, want: specs.Resources{PidsLimit: 64}},
		{name: "pids unlimited refused", limits: specs.Limits{PidsLimit: "-1"}, field: "pids-limit", msg: "from 1 to 32768"},
		{name: "unsupported on host", limits: specs.Limits{MemorySwap: "128m", Memory: "64m"},
			host: specs.Host{NCPU: 2, Unsupported: map[string]string{"memory-swap": "no swap accounting"}}, field: "memory-swap", msg: "no swap accounting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := tt.host
			if host.NCPU == 0 {
				host = twoCPUs
			}
			plan, errs := Validate(lane(tt.limits), host)
			if tt.field == "" {
				if errs != nil {
					t.Fatalf("unexpected errors: %v", errs)
				}
				if got := plan.Lanes[0].Resources; got != tt.want {
					t.Errorf("resources = %+v, want %+v", got, tt.want)
				}
				return
			}
			if errs == nil {
				t.Fatalf("no error, want one on %s", tt.field)
			}
			for _, e := range errs {
				if e.Lane == 0 && e.Field == tt.field && strings.Contains(e.Message, tt.msg) {
					return
				}
			}
			t.Errorf("errors %v: none on lane 0 field %q containing %q", errs, tt.field, tt.msg)
		})
	}
}

func TestValidateSpec(t *testing.T) {
	md5 := specs.Workload{Kind: specs.KindMD5}
	tests := []struct {
		name  string
		spec  specs.Spec
		lane  int
		field string
		msg   string
	}{
		{"no lanes", specs.Spec{}, -1, "lanes", "want 1 to 12 lanes, got 0"},
		{"too many lanes", specs.Spec{Lanes: make([]specs.Lane, 13)}, -1, "lanes", "got 13"},
		{"bad mode", specs.Spec{Mode: "serial", Lanes: []specs.Lane{{Workload: md5}}}, -1, "mode", `not "serial"`},
		{"bad duration", specs.Spec{Duration: "forever", Lanes: []specs.Lane{{Workload: md5}}}, -1, "duration", "invalid duration"},
		{"duration over cap", specs.Spec{Duration: "11m", Lanes: []specs.Lane{{Workload: md5}}}, -1, "duration", "from 1s to 10m0s"},
		{"duplicate lane names", specs.Spec{Lanes: []specs.Lane{{Name: "x", Workload: md5}, {Name: "x", Workload: md5}}}, 1, "name", "already the name of lane 0"},
		{"missing kind", specs.Spec{Lanes: []specs.Lane{{}}}, 0, "workload.kind", "missing"},
		{"unknown kind", specs.Spec{Lanes: []specs.Lane{{Workload: specs.Workload{Kind: "fio"}}}}, 0, "workload.kind", `unknown workload "fio"`},
		{"field of another kind", specs.Spec{Lanes: []specs.Lane{{Workload: specs.Workload{Kind: specs.KindMD5, Threads: 2}}}}, 0, "workload.threads", "does not apply to the md5 workload"},
		{"threads out of range", specs.Spec{Lanes: []specs.Lane{{Workload: md5}, {Workload: specs.Workload{Kind: specs.KindPrimes, Threads: 65}}}}, 1, "workload.threads", "from 1 to 64"},
		{"negative seconds", specs.Spec{Lanes: []specs.Lane{{Workload: specs.Workload{Kind: specs.KindSpin, Seconds: -1}}}}, 0, "workload.seconds", "from 0 to 600"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := Validate(tt.spec, twoCPUs)
			for _, e := range errs {
				if e.Lane == tt.lane && e.Field == tt.field && strings.Contains(e.Message, tt.msg) {
					return
				}
			}
			t.Errorf("errors %v: none on lane %d field %q containing %q", errs, tt.lane, tt.field, tt.msg)
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	spec := specs.Spec{Mode: "x", Lanes: []specs.Lane{
		{Workload: specs.Workload{Kind: specs.KindMD5}, Limits: specs.Limits{CPUs: "9", Memory: "1m"}},
		{Workload: specs.Workload{Kind: "nope"}},
	}}
	plan, errs := Validate(spec, twoCPUs)
	if len(plan.Lanes) != 0 {
		t.Errorf("a plan came back from an invalid spec: %+v", plan)
	}
	want := map[[2]any]bool{{-1, "mode"}: false, {0, "cpus"}: false, {0, "memory"}: false, {1, "workload.kind"}: false}
	for _, e := range errs {
		want[[2]any{e.Lane, e.Field}] = true
	}
	for k, found := range want {
		if !found {
			t.Errorf("no error for lane %v field %v in %v", k[0], k[1], errs)
		}
	}
}

func TestValidateDefaults(t *testing.T) {
	plan, errs := Validate(specs.Spec{Lanes: []specs.Lane{{Workload: specs.Workload{Kind: specs.KindPrimes}}, {Workload: specs.Workload{Kind: specs.KindSpin}}}}, twoCPUs)
	if errs != nil {
		t.Fatal(errs)
	}
	if plan.Mode != specs.Parallel || plan.Duration != specs.DefaultDuration || plan.Name == "" {
		t.Errorf("plan defaults: mode %q duration %s name %q", plan.Mode, plan.Duration, plan.Name)
	}
	if l := plan.Lanes[0]; l.Name != "lane 1" || l.Workload.Threads != 1 || l.Workload.Events != 10000 || l.Workload.MaxPrime != 10000 {
		t.Errorf("primes defaults: %+v", l)
	}
	if l := plan.Lanes[1]; l.Name != "lane 2" || l.Workload.Seconds != 10 {
		t.Errorf("spin defaults: %+v", l)
	}
	if _, errs := Validate(specs.Spec{Duration: "90s", Lanes: []specs.Lane{{Workload: specs.Workload{Kind: specs.KindMD5}}}}, twoCPUs); errs != nil {
		t.Error(errs)
	}
	if p, _ := Validate(specs.Spec{Duration: "90s", Lanes: []specs.Lane{{Workload: specs.Workload{Kind: specs.KindMD5}}}}, twoCPUs); p.Duration != 90*time.Second {
		t.Errorf("duration = %s", p.Duration)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name  string
		json  string
		lane  int
		field string
		msg   string
	}{
		{"malformed", `{"lanes": [`, -1, "spec", "ends before the value does"},
		{"not JSON", `cpus=1`, -1, "spec", "malformed JSON"},
		{"empty", ``, -1, "spec", "empty body"},
		{"unknown top field", `{"lanez": []}`, -1, "lanez", "unknown field"},
		{"unknown limit", `{"lanes": [{"workload": {"kind": "md5"}, "limits": {"cpu_shares": 2}}]}`, 0, "cpu_shares", "unknown field"},
		{"wrong type", `{"lanes": [{"workload": {"kind": "md5", "mb": "ten"}}]}`, 0, "workload.mb", "want int"},
		{"second lane", `{"lanes": [{"workload": {"kind": "md5"}}, {"workload": {"kind": "md5", "mb": 1.5}}]}`, 1, "workload.mb", "want int"},
		{"trailing data", `{"lanes": []} {}`, -1, "spec", "after the JSON value"},
		{"size without sense", `{"lanes": [{"workload": {"kind": "disk-write"}}, {"workload": {"kind": "disk-write", "bs": "1 parsec"}}]}`, 1, "workload.bs", `want a size in bytes: a whole number, or one with the docker CLI's units ("1m" is 1048576`},
		{"size below zero", `{"lanes": [{"workload": {"kind": "disk-read", "bs": -4096}}]}`, 0, "workload.bs", "want a size in bytes"},
		{"size as a fraction", `{"lanes": [{"workload": {"kind": "disk-read", "bs": 4096.5}}]}`, 0, "workload.bs", "want a size in bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := Parse([]byte(tt.json))
			for _, e := range errs {
				if e.Lane == tt.lane && e.Field == tt.field && strings.Contains(e.Message, tt.msg) {
					return
				}
			}
			t.Errorf("errors %v: none on lane %d field %q containing %q", errs, tt.lane, tt.field, tt.msg)
		})
	}
}

// Sizes take the docker CLI's units, as dd's users write bs=1M, and are
// kept (and echoed) in bytes; the bounds hold on the bytes.
func TestSizesTakeUnits(t *testing.T) {
	for in, want := range map[string]specs.Bytes{`"1m"`: 1 << 20, `"1M"`: 1 << 20, `"4k"`: 4096, `"64KiB"`: 65536, `8192`: 8192, `"2097152"`: 2 << 20} {
		spec, errs := Parse([]byte(`{"lanes": [{"workload": {"kind": "disk-read", "bs": ` + in + `}}]}`))
		if errs != nil || spec.Lanes[0].Workload.BS != want {
			t.Errorf("bs %s: %v, errors %v; want %d", in, spec.Lanes[0].Workload.BS, errs, want)
		}
	}
	spec, _ := Parse([]byte(`{"lanes": [{"workload": {"kind": "disk-write", "bs": "1m"}}]}`))
	if b, _ := json.Marshal(spec.Lanes[0].Workload); !strings.Contains(string(b), `"bs":1048576`) {
		t.Errorf("echoed as %s, want the bytes", b)
	}
	spec, _ = Parse([]byte(`{"lanes": [{"workload": {"kind": "disk-write", "bs": "1g"}}]}`))
	if _, errs := Validate(spec, twoCPUs); errs == nil || !strings.Contains(errs.Error(), "workload.bs") {
		t.Errorf("bs 1g: %v, want refused by the bound", errs)
	}
}

func TestParseLimitsAsNumbersOrStrings(t *testing.T) {
	spec, errs := Parse([]byte(`{"lanes": [{"workload": {"kind": "md5"}, "limits": {"cpus": 0.5, "cpu-shares": "512", "memory": "64m", "pids-limit": 100}}]}`))
	if errs != nil {
		t.Fatal(errs)
	}
	l := spec.Lanes[0].Limits
	if l.CPUs != "0.5" || l.CPUShares != "512" || l.Memory != "64m" || l.PidsLimit != "100" {
		t.Errorf("limits = %+v", l)
	}
}

func TestDockerRun(t *testing.T) {
	got := specs.DockerRun("limitlab-workload", specs.Workload{Kind: specs.KindMD5, MB: 30},
		specs.Resources{NanoCPUs: 5e8, CPUShares: 512, CpusetCpus: "0,1", Memory: 64 << 20, MemorySwap: -1, PidsLimit: 512}, "")
	want := "docker run --rm --read-only --cap-drop ALL --security-opt no-new-privileges --network none " +
		"--cpus 0.5 --cpu-shares 512 --cpuset-cpus 0,1 --memory 64m --memory-swap -1 --pids-limit 512 " +
		"limitlab-workload md5 -mb 30"
	if got != want {
		t.Errorf("DockerRun =\n%s\nwant\n%s", got, want)
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{64 << 20: "64m", 1 << 30: "1g", 1536: "1536b", 6 << 20: "6m", 3 << 10: "3k", -1: "-1"} {
		if got := specs.FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestLabsAreValid(t *testing.T) {
	if len(Labs()) == 0 {
		t.Fatal("no labs")
	}
	for _, l := range Labs() {
		t.Run(l.ID, func(t *testing.T) {
			spec, errs := Parse([]byte(`{"lab": "` + l.ID + `"}`))
			if errs != nil {
				t.Fatal(errs)
			}
			host := specs.Host{NCPU: 2, DataRootDevice: "/dev/vda"}
			if l.RequiresCPUManager != "" {
				host.Kubernetes, host.CPUManager = true, l.RequiresCPUManager
			}
			plan, errs := Validate(spec, host)
			if errs != nil {
				t.Fatal(errs)
			}
			if plan.Lab != l.ID || plan.Verdict != l.Verdict {
				t.Errorf("plan lab %q verdict %v", plan.Lab, plan.Verdict)
			}
			if l.Title == "" || l.Question == "" || l.Before == "" || l.After == "" || l.Seed == "" {
				t.Errorf("lab %s lacks text: %+v", l.ID, l)
			}
		})
	}
}

func TestLabRequests(t *testing.T) {
	if _, errs := Parse([]byte(`{"lab": "nope"}`)); len(errs) != 1 || errs[0].Field != "lab" {
		t.Errorf("unknown lab: %v", errs)
	}
	if _, errs := Parse([]byte(`{"lab": "cpus-ladder", "lanes": [{"workload": {"kind": "md5"}}]}`)); len(errs) != 1 || errs[0].Field != "lab" {
		t.Errorf("lab with lanes: %v", errs)
	}
	io, _ := LabByID("io-write-bps")
	if shows, why := io.Shows(twoCPUs); shows || !strings.Contains(why, "auto") {
		t.Errorf("an IO lab on a host without a known data root disk: shows %v (%s)", shows, why)
	}
	weight, _ := LabByID("io-weight")
	if shows, why := weight.Shows(specs.Host{NCPU: 2, Unsupported: map[string]string{"blkio-weight": "no weight support"}}); shows || !strings.Contains(why, "no weight support") {
		t.Errorf("the weight lab without weight support: shows %v (%s)", shows, why)
	}
	spec, _ := Parse([]byte(`{"lab": "cpus-ladder"}`))
	_, errs := Validate(spec, specs.Host{NCPU: 1})
	found := false
	for _, e := range errs {
		found = found || e.Field == "lab" && strings.Contains(e.Message, "needs 2")
	}
	if !found {
		t.Errorf("a 2-CPU lab on a 1-CPU host: %v", errs)
	}
}

func TestCPULimit(t *testing.T) {
	for _, tt := range []struct {
		r    specs.Resources
		want float64
	}{
		{specs.Resources{}, 0}, {specs.Resources{NanoCPUs: 25e7}, 0.25},
		{specs.Resources{CPUQuota: 50000, CPUPeriod: 100000}, 0.5}, {specs.Resources{CPUQuota: 150000}, 1.5},
	} {
		if got := tt.r.CPULimit(); got != tt.want {
			t.Errorf("%+v.CPULimit() = %g, want %g", tt.r, got, tt.want)
		}
	}
}

func TestResolveChange(t *testing.T) {
	cur := specs.Resources{NanoCPUs: 1e9, Memory: 64 << 20, MemoryReservation: 32 << 20, PidsLimit: 512}
	tests := []struct {
		name   string
		cur    specs.Resources
		change specs.Limits
		want   specs.Resources
		field  string
	}{
		{"cpus down", cur, specs.Limits{CPUs: "0.25"}, specs.Resources{NanoCPUs: 25e7}, ""},
		{"shares and cpuset", cur, specs.Limits{CPUShares: "64", CpusetCpus: "1"}, specs.Resources{CPUShares: 64, CpusetCpus: "1"}, ""},
		{"pids", cur, specs.Limits{PidsLimit: "100"}, specs.Resources{PidsLimit: 100}, ""},
		{"memory up", cur, specs.Limits{Memory: "128m"}, specs.Resources{Memory: 128 << 20}, ""},
		{"memory below reservation", cur, specs.Limits{Memory: "16m"}, specs.Resources{}, "memory"},
		{"cpus beside a quota", specs.Resources{CPUQuota: 50000, CPUPeriod: 100000}, specs.Limits{CPUs: "1"}, specs.Resources{}, "cpus"},
		{"period is not live", cur, specs.Limits{CPUPeriod: "10000"}, specs.Resources{}, "cpu-period"},
		{"nothing", cur, specs.Limits{}, specs.Resources{}, "limits"},
		{"bad value", cur, specs.Limits{CPUs: "9"}, specs.Resources{}, "cpus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := specs.ResolveChange(tt.cur, tt.change, twoCPUs)
			if tt.field == "" {
				if errs != nil || got != tt.want {
					t.Errorf("got %+v, %v; want %+v", got, errs, tt.want)
				}
				return
			}
			if len(errs) == 0 || errs[0].Field != tt.field {
				t.Errorf("errors %v, want one on %s", errs, tt.field)
			}
		})
	}
	if m := cur.Merge(specs.Resources{NanoCPUs: 5e8, PidsLimit: 10}); m.NanoCPUs != 5e8 || m.PidsLimit != 10 || m.Memory != 64<<20 {
		t.Errorf("merge = %+v", m)
	}
}

func TestServicesAndLoad(t *testing.T) {
	svc := func(name string) specs.Lane {
		return specs.Lane{Name: name, Workload: specs.Workload{Kind: specs.KindHTTP}}
	}
	load := func(name, target string) specs.Lane {
		return specs.Lane{Name: name, Workload: specs.Workload{Kind: specs.KindLoad, Target: target, Requests: 100}}
	}
	plan, errs := Validate(specs.Spec{Mode: specs.Sequential, Lanes: []specs.Lane{
		load("ab host", "svc host"), svc("svc host"), svc("svc auto"), load("ab auto", "svc auto"), {Workload: specs.Workload{Kind: specs.KindMD5}},
	}}, twoCPUs)
	if errs != nil {
		t.Fatal(errs)
	}
	if plan.Lanes[0].Target != 1 || plan.Lanes[3].Target != 2 || plan.Lanes[1].Target != -1 {
		t.Errorf("targets %d %d %d", plan.Lanes[0].Target, plan.Lanes[3].Target, plan.Lanes[1].Target)
	}
	want := [][]int{{0, 1}, {2, 3}, {4}}
	if fmt.Sprint(plan.Groups) != fmt.Sprint(want) {
		t.Errorf("groups %v, want %v", plan.Groups, want)
	}
	if w := plan.Lanes[1].Workload; w.GOMAXPROCS != "auto" || w.WorkUS != 1000 {
		t.Errorf("http defaults %+v", w)
	}
	if got := strings.Join(plan.Lanes[0].Workload.Args(), " "); got != "load -target http://127.0.0.1:8080/ -requests 100 -concurrency 1" {
		t.Errorf("load args %q", got)
	}

	tests := []struct {
		name  string
		lanes []specs.Lane
		lane  int
		field string
		part  string
	}{
		{"no such target", []specs.Lane{load("ab", "nope")}, 0, "workload.target", `no lane is named "nope"`},
		{"target not http", []specs.Lane{{Name: "m", Workload: specs.Workload{Kind: specs.KindMD5}}, load("ab", "m")}, 1, "workload.target", "not an http service"},
		{"no target", []specs.Lane{{Workload: specs.Workload{Kind: specs.KindLoad, Requests: 1}}}, 0, "workload.target", "missing"},
		{"no bound", []specs.Lane{svc("s"), {Workload: specs.Workload{Kind: specs.KindLoad, Target: "s"}}}, 1, "workload.requests", "give requests"},
		{"bad gomaxprocs", []specs.Lane{{Workload: specs.Workload{Kind: specs.KindHTTP, GOMAXPROCS: "lots"}}}, 0, "workload.gomaxprocs", "auto, host or a number"},
		{"target on md5", []specs.Lane{{Workload: specs.Workload{Kind: specs.KindMD5, Target: "x"}}}, 0, "workload.target", "does not apply"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := Validate(specs.Spec{Lanes: tt.lanes}, twoCPUs)
			for _, e := range errs {
				if e.Lane == tt.lane && e.Field == tt.field && strings.Contains(e.Message, tt.part) {
					return
				}
			}
			t.Errorf("errors %v: none on lane %d field %q containing %q", errs, tt.lane, tt.field, tt.part)
		})
	}
}

func TestPhases(t *testing.T) {
	md5 := specs.Workload{Kind: specs.KindMD5}
	plan, errs := Validate(specs.Spec{Duration: "30s", Lanes: []specs.Lane{
		{Name: "victim", Workload: md5},
		{Name: "n1", Workload: md5, StartAt: "10s", StopAt: "20s"},
		{Name: "n2", Workload: md5, StartAt: "20s"},
	}}, twoCPUs)
	if errs != nil {
		t.Fatal(errs)
	}
	if plan.Lanes[1].StartAt != 10*time.Second || plan.Lanes[1].StopAt != 20*time.Second || plan.Lanes[0].StartAt != 0 {
		t.Errorf("offsets %+v", plan.Lanes)
	}
	if b := plan.PhaseBounds(); fmt.Sprint(b) != "[10 20]" {
		t.Errorf("bounds %v", b)
	}
	for _, tt := range []struct {
		spec  specs.Spec
		field string
	}{
		{specs.Spec{Duration: "30s", Lanes: []specs.Lane{{Workload: md5, StartAt: "40s"}}}, "start_at"},
		{specs.Spec{Duration: "30s", Lanes: []specs.Lane{{Workload: md5, StartAt: "10s", StopAt: "5s"}}}, "stop_at"},
		{specs.Spec{Duration: "30s", Lanes: []specs.Lane{{Workload: md5, StopAt: "soon"}}}, "stop_at"},
		{specs.Spec{Mode: specs.Sequential, Duration: "30s", Lanes: []specs.Lane{{Workload: md5, StartAt: "5s"}}}, "start_at"},
	} {
		if _, errs := Validate(tt.spec, twoCPUs); len(errs) == 0 || errs[0].Field != tt.field {
			t.Errorf("%+v: errors %v, want one on %s", tt.spec.Lanes, errs, tt.field)
		}
	}
}
