package experiments

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/experiments/finder"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

func TestFindSpecChecksAndProbes(t *testing.T) {
	good := `{"name": "right-size", "service": {"kind": "http", "work_us": 4000, "gomaxprocs": "1"}, "load": {"rate": 150, "seconds": 8},
	  "target": {"p99_ms": 50, "errors_pct": 1}, "search": {"limit": "cpus", "min": "0.2", "max": "1.4", "resolution": "0.2"}}`
	fs, errs := ParseFind([]byte(good))
	if errs != nil {
		t.Fatal(errs)
	}
	b, errs := fs.Check()
	if errs != nil || b.Repeats != finder.DefaultRepeats || b.Min != 0.2 || b.Max != 1.4 {
		t.Fatalf("%+v %v", b, errs)
	}
	if l := b.Limit(3); l != 0.8 {
		t.Errorf("step 3 of 0.2 by 0.2 is %v, want 0.8 to a millionth", l)
	}
	if need := fs.ServiceNeeds(); math.Abs(need-0.6) > 1e-9 {
		t.Errorf("the model says the service needs %.2f cores, want rate × work, 0.6", need)
	}
	probe := fs.ProbeSpec(0.6)
	if len(probe.Lanes) != 2 || probe.Lanes[0].Limits.CPUs != "0.6" || probe.Lanes[1].Workload.Target != finder.ProbeService ||
		probe.Lanes[1].Workload.Rate != 150 || probe.Mode != specs.Sequential || !strings.Contains(probe.Name, "cpus 0.6") {
		t.Errorf("probe spec %+v", probe)
	}
	rec := fs.Recommend(b, finder.Answer{Found: true, Limit: 0.8})
	if rec == nil || rec.Request != "0.8" || rec.Limit != "1" || !strings.Contains(rec.WhyLimit, "25%") {
		t.Errorf("recommendation %+v, want a request of 0.8 and a limit of 1 (0.8 + 25%% in 0.2 steps)", rec)
	}

	mem := strings.Replace(good, `"limit": "cpus", "min": "0.2", "max": "1.4", "resolution": "0.2"`, `"limit": "memory", "min": "32m", "max": "256m", "resolution": "16m"`, 1)
	fs, _ = ParseFind([]byte(mem))
	if b, errs := fs.Check(); errs != nil || b.Min != 32 || b.Max != 256 || fs.ProbeSpec(48).Lanes[0].Limits.Memory != "48m" {
		t.Errorf("a memory search: %+v %v", b, errs)
	}

	for _, c := range []struct{ body, field string }{
		{strings.Replace(good, `"kind": "http"`, `"kind": "spin"`, 1), "service.kind"},
		{strings.Replace(good, `"rate": 150`, `"rate": 150, "concurrency": 4`, 1), "load"},
		{strings.Replace(good, `"seconds": 8`, `"seconds": 600`, 1), "load.seconds"},
		{strings.Replace(good, `"p99_ms": 50`, `"p99_ms": 0`, 1), "target.p99_ms"},
		{strings.Replace(good, `"limit": "cpus"`, `"limit": "pids"`, 1), "search.limit"},
		{strings.Replace(good, `"max": "1.4"`, `"max": "lots"`, 1), "search.max"},
		{strings.Replace(good, `"max": "1.4"`, `"max": "0.1"`, 1), "search.max"},
		{strings.Replace(good, `"resolution": "0.2"`, `"resolution": "0.0001"`, 1), "search.resolution"},
		{strings.Replace(good, `"limit": "cpus"`, `"limit": "cpus", "repeats": 99`, 1), "search.repeats"},
	} {
		fs, errs := ParseFind([]byte(c.body))
		if errs == nil {
			_, errs = fs.Check()
		}
		if len(errs) == 0 || errs[0].Field != c.field {
			t.Errorf("%s: errors %+v, want one naming %s", c.body, errs, c.field)
		}
	}
	if _, errs := ParseFind([]byte(`{"Service": {}}`)); errs == nil {
		t.Error("a key in the wrong case was taken")
	}
}

func TestRightSizeLabIsASearch(t *testing.T) {
	fs, errs := ParseFind([]byte(`{"lab": "right-size-go"}`))
	if errs != nil {
		t.Fatal(errs)
	}
	if fs.Lab != "right-size-go" || fs.Service.WorkUS != 4000 || fs.Load.Rate != 150 || fs.Target.P99Ms != 50 || fs.Search.Limit != finder.FindCPUs {
		t.Errorf("the lab's search %+v", fs)
	}
	if _, errs := fs.Check(); errs != nil {
		t.Error(errs)
	}
	if math.Abs(fs.ServiceNeeds()-0.6) > 1e-9 {
		t.Errorf("the lab's floor %.2f, want 0.6", fs.ServiceNeeds())
	}
	for body, want := range map[string]string{
		`{"lab": "cpus-ladder"}`:                 "not a search",
		`{"lab": "nope"}`:                        "no lab",
		`{"lab": "right-size-go", "name": "x"}`:  "either a lab or a search",
		`{"lab": "right-size-go", "load": null}`: "", // null is no value: the lab's own
	} {
		_, errs := ParseFind([]byte(body))
		if want == "" {
			if errs != nil {
				t.Errorf("%s: %v", body, errs)
			}
			continue
		}
		if errs == nil || errs[0].Field != "lab" || !strings.Contains(errs[0].Message, want) {
			t.Errorf("%s: %v, want lab: %q", body, errs, want)
		}
	}
	judged, pass, text := finder.JudgeFind(fs, finder.Answer{Found: true, Limit: 0.8})
	if !judged || !pass || !strings.Contains(text, "0.6 cores") {
		t.Errorf("an answer above the floor: %v %v %q", judged, pass, text)
	}
	if _, pass, _ := finder.JudgeFind(fs, finder.Answer{Found: true, Limit: 0.6}); pass {
		t.Error("an answer at the floor judged as predicted")
	}
	lab, _ := LabByID("right-size-go")
	raw, _ := json.Marshal(lab)
	broken := strings.Replace(string(raw), `"p99_ms":50`, `"p99_ms":-1`, 1)
	if _, b := ParseLabFile("broken.json", []byte(broken)); b == nil || b.Field != "find.target.p99_ms" {
		t.Errorf("a search lab with a bad target: %+v", b)
	}
}

// A search's second turn searches the other limit, with the first's
// answer fixed; fixed limits hold in every probe, and are never one a
// turn searches.
func TestSearchInTurn(t *testing.T) {
	base := `{"service": {"kind": "http", "work_us": 4000}, "load": {"rate": 150, "seconds": 8}, "target": {"p99_ms": 50},
	  "search": {"limit": "cpus", "min": "0.2", "max": "2", "resolution": "0.1"}`
	fs, errs := ParseFind([]byte(base + `, "then": {"limit": "memory", "min": "16m", "max": "256m", "resolution": "16m"}, "fixed": {"pids-limit": "64"}}`))
	if errs != nil {
		t.Fatal(errs)
	}
	if _, errs := fs.Check(); errs != nil {
		t.Fatal(errs)
	}
	next, ok := fs.Following("0.7")
	if !ok || next.Search.Limit != finder.FindMemory || next.Then != nil || next.Fixed.CPUs != "0.7" || next.Fixed.PidsLimit != "64" {
		t.Fatalf("the second turn: %+v", next)
	}
	if _, errs := next.Check(); errs != nil {
		t.Fatal(errs)
	}
	lanes := next.ProbeSpec(96).Lanes
	if l := lanes[0].Limits; l.CPUs != "0.7" || l.Memory != "96m" || l.PidsLimit != "64" {
		t.Errorf("the second turn's probe limits %+v", l)
	}
	if _, ok := next.Following("96m"); ok {
		t.Error("a second turn has a third")
	}
	for tail, field := range map[string]string{
		`, "then": {"limit": "cpus", "min": "0.2", "max": "1", "resolution": "0.1"}}`:   "then.limit",
		`, "then": {"limit": "memory", "min": "16m", "max": "8m", "resolution": "8m"}}`: "then.max",
		`, "then": {"limit": "memory", "min": "x", "max": "8m", "resolution": "1m"}}`:   "then.min",
		`, "fixed": {"cpus": "1"}}`: "fixed.cpus",
		`, "then": {"limit": "memory", "min": "16m", "max": "64m", "resolution": "16m"}, "fixed": {"memory": "1g"}}`: "fixed.memory",
	} {
		fs, errs := ParseFind([]byte(base + tail))
		if errs == nil {
			_, errs = fs.Check()
		}
		if len(errs) == 0 || errs[0].Field != field {
			t.Errorf("%s: %v, want %s", tail, errs, field)
		}
	}
}
