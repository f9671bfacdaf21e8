package experiments

import (
	"fmt"
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// hostileSpec is a 64 KiB spec of as many lanes as fit, each asking for
// "--cpus 1e999999": once 35 s of CPU to refuse.
func hostileSpec() []byte {
	var b strings.Builder
	b.WriteString(`{"lanes": [`)
	for i := 0; b.Len() < 64<<10-100; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"name": "l%d", "workload": {"kind": "md5"}, "limits": {"cpus": "1e999999"}}`, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func TestHostileSpecsAreRefusedBeforeTheirLanesAreRead(t *testing.T) {
	spec := hostileSpec()
	_, errs := Parse(spec)
	if len(errs) != 1 || errs[0].Field != "lanes" || !strings.Contains(errs[0].Message, "want 1 to 12 lanes") {
		t.Fatalf("a %d-byte spec of too many lanes: %d errors, first %v; want the lane cap alone", len(spec), len(errs), errs[:min(1, len(errs))])
	}
	lanes := make([]specs.Lane, 200)
	for i := range lanes {
		lanes[i] = specs.Lane{Name: fmt.Sprint(i), Workload: specs.Workload{Kind: specs.KindMD5}, Limits: specs.Limits{CPUs: "1e999999"}}
	}
	if _, errs := Validate(specs.Spec{Lanes: lanes}, twoCPUs); len(errs) != 1 || errs[0].Field != "lanes" {
		t.Errorf("validating 200 lanes: %d errors, want the lane cap alone", len(errs))
	}
}

func TestNumbersThatCostMoreThanTheyMean(t *testing.T) {
	for _, v := range []specs.Value{"1e999999", "1e3", "1/2", "0x1", "1234567", "0.5e1", "+1", "-1", "1.0000000000001", specs.Value(strings.Repeat("9", 70))} {
		t.Run(string(v), func(t *testing.T) {
			_, errs := specs.ResolveLimits(specs.Limits{CPUs: v}, twoCPUs)
			if len(errs) == 0 || errs[0].Field != "cpus" {
				t.Errorf("--cpus %q accepted: %v", v, errs)
			}
		})
	}
	for _, ok := range []specs.Value{"0.5", ".25", "2", "1.", "0.010000000"} {
		if _, errs := specs.ResolveLimits(specs.Limits{CPUs: ok}, twoCPUs); errs != nil {
			t.Errorf("--cpus %q refused: %v", ok, errs)
		}
	}
}

func TestLimitsTheEngineWouldTakeButALabMustNot(t *testing.T) {
	tests := []struct {
		name   string
		limits specs.Limits
		field  string
	}{
		{"quota beyond every CPU for a second", specs.Limits{CPUQuota: "999999999999"}, "cpu-quota"},
		{"cpuset with a sign", specs.Limits{CpusetCpus: "+1"}, "cpuset-cpus"},
		{"cpuset with spaces", specs.Limits{CpusetCpus: "0, 1"}, "cpuset-cpus"},
		{"device path that climbs out of /dev", specs.Limits{DeviceReadBps: "/dev/../etc/passwd:1mb"}, "device-read-bps"},
		{"device path not clean", specs.Limits{DeviceWriteIOps: "/dev//sda:5"}, "device-write-iops"},
		{"a limit of absurd length", specs.Limits{Memory: specs.Value("64" + strings.Repeat("0", 100) + "m")}, "memory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := specs.ResolveLimits(tt.limits, twoCPUs)
			if len(errs) == 0 || errs[0].Field != tt.field {
				t.Errorf("accepted, or not on %s: %v", tt.field, errs)
			}
		})
	}
}

func TestKeysAreExact(t *testing.T) {
	tests := []struct{ name, json, field string }{
		{"capitalised key", `{"Lanes": [{"workload": {"kind": "md5"}}]}`, "Lanes"},
		{"capitalised limit", `{"lanes": [{"workload": {"kind": "md5"}, "Limits": {"cpus": "2"}}]}`, "Limits"},
		{"a key twice", `{"lanes": [], "lanes": [{"workload": {"kind": "md5"}}]}`, "lanes"},
		{"a limit twice", `{"lanes": [{"workload": {"kind": "md5"}, "limits": {"cpus": "0.1", "cpus": "2"}}]}`, "cpus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := Parse([]byte(tt.json))
			if len(errs) == 0 || errs[0].Field != tt.field {
				t.Errorf("errors %v, want one on %q", errs, tt.field)
			}
		})
	}
	if _, errs := Parse([]byte(`{"name": "ok", "lanes": [{"name": "a", "workload": {"kind": "md5", "mb": 64}, "limits": {"cpus": "0.5"}}]}`)); errs != nil {
		t.Errorf("a plain spec refused: %v", errs)
	}
}

// BenchmarkHostileSpec is the cost of refusing the worst 64 KiB body: once
// about 35 s, now bounded by the lane cap.
func BenchmarkHostileSpec(b *testing.B) {
	spec := hostileSpec()
	b.SetBytes(int64(len(spec)))
	for b.Loop() {
		if s, errs := Parse(spec); errs == nil {
			Validate(s, twoCPUs)
		}
	}
}

// BenchmarkTwelveHostileLanes is twelve lanes of the worst values that
// pass the lane cap.
func BenchmarkTwelveHostileLanes(b *testing.B) {
	lanes := make([]specs.Lane, specs.MaxLanes)
	for i := range lanes {
		lanes[i] = specs.Lane{Name: fmt.Sprint(i), Workload: specs.Workload{Kind: specs.KindMD5},
			Limits: specs.Limits{CPUs: "1e999999", Memory: specs.Value(strings.Repeat("9", 60) + "g"), CpusetCpus: "0-4095"}}
	}
	for b.Loop() {
		Validate(specs.Spec{Lanes: lanes}, twoCPUs)
	}
}

// TestValidRunsThatWouldExhaustTheHost: each spec is valid lane by lane,
// but together its lanes would take the host's memory, disk or time.
func TestValidRunsThatWouldExhaustTheHost(t *testing.T) {
	host := specs.Host{NCPU: 2, MemTotal: 23 << 30, DiskFree: 79 << 30, DataRootDevice: "/dev/vda"}
	lanes := func(n int, l specs.Lane) []specs.Lane {
		out := make([]specs.Lane, n)
		for i := range out {
			out[i] = l
			out[i].Name = fmt.Sprint("l", i)
		}
		return out
	}
	tests := []struct {
		name  string
		spec  specs.Spec
		field string
	}{
		{"two 16 GiB mem lanes without --memory", specs.Spec{Lanes: lanes(2, specs.Lane{Workload: specs.Workload{Kind: specs.KindMem, MB: 16384}})}, "memory"},
		{"two lanes of --memory 16g", specs.Spec{Lanes: lanes(2, specs.Lane{Workload: specs.Workload{Kind: specs.KindMD5}, Limits: specs.Limits{Memory: "16g"}})}, "memory"},
		{"twelve 64 GiB disk writers", specs.Spec{Lanes: lanes(12, specs.Lane{Workload: specs.Workload{Kind: specs.KindDiskWrite, MB: 65536}})}, "workload.mb"},
		{"twelve sequential lanes of ten minutes", specs.Spec{Mode: specs.Sequential, Duration: "10m", Lanes: lanes(12, specs.Lane{Workload: specs.Workload{Kind: specs.KindSpin}})}, "duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := Validate(tt.spec, host)
			found := false
			for _, e := range errs {
				found = found || e.Field == tt.field
			}
			if !found {
				t.Errorf("errors %v, want one on %s", errs, tt.field)
			}
		})
	}
	plan, errs := Validate(specs.Spec{Lanes: []specs.Lane{{Workload: specs.Workload{Kind: specs.KindMem, MB: 200}}}}, host)
	if errs != nil {
		t.Fatal(errs)
	}
	if got := plan.Lanes[0].Resources.Memory; got != 200<<20+specs.MemHeadroom {
		t.Errorf("a mem lane without --memory gets %d bytes, want its size and headroom", got)
	}
}
