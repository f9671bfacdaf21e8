package experiments

import (
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/experiments/specs"
)

func imageLab(workload string) specs.Spec {
	spec, errs := specs.ParseCustom([]byte(`{"mode": "sequential", "lanes": [
	  {"name": "service", "workload": ` + workload + `},
	  {"name": "load", "workload": {"kind": "load", "target": "service", "rate": 10, "seconds": 2}}]}`))
	if errs != nil {
		panic(errs)
	}
	return spec
}

// A facilitator's service from a lab file: its fields are checked, its
// load lane targets its port, and only an engine that has the image and a
// server that allows it run it.
func TestAFacilitatorsImage(t *testing.T) {
	spec := imageLab(`{"kind": "image", "image": "example.org/team/api:1.2", "port": 9090, "command": "-listen :9090"}`)
	allowed := specs.Host{Images: map[string]bool{"example.org/team/api:1.2": true}}
	plan, errs := Validate(spec, allowed)
	if errs != nil {
		t.Fatal(errs)
	}
	if got := plan.Lanes[1].Workload.Command().Target; got != "http://127.0.0.1:9090/" {
		t.Errorf("the load targets %q", got)
	}
	if got := strings.Join(plan.Lanes[0].Workload.Args(), " "); got != "-listen :9090" {
		t.Errorf("the service's command %q", got)
	}
	if _, errs := Validate(spec, specs.Host{}); errs != nil {
		t.Errorf("a lab file read on its own (no engine): %v", errs)
	}
	for _, c := range []struct {
		host specs.Host
		want string
	}{
		{specs.Host{Images: map[string]bool{}}, "does not allow"},
		{specs.Host{Images: map[string]bool{"example.org/team/api:1.2": false}}, "not on this engine"},
		{specs.Host{Kubernetes: true}, "Docker engines only"},
	} {
		_, errs := Validate(spec, c.host)
		if len(errs) != 1 || errs[0].Lane != 0 || errs[0].Field != "workload.image" || !strings.Contains(errs[0].Message, c.want) {
			t.Errorf("host %+v: %v, want lane 0's workload.image: %s", c.host, errs, c.want)
		}
	}
	for workload, field := range map[string]string{
		`{"kind": "image", "image": "Not An Image!"}`:                                        "workload.image",
		`{"kind": "image", "image": "api:1", "port": 80}`:                                    "workload.port",
		`{"kind": "image", "image": "api:1", "command": "a\u0007b"}`:                         "workload.command",
		`{"kind": "image", "image": "api:1", "work_us": 1000}`:                               "workload.work_us",
		`{"kind": "http", "port": 9090}`:                                                     "workload.port",
		`{"kind": "image", "image": "api:1", "command": "` + strings.Repeat("x ", 40) + `"}`: "workload.command",
	} {
		_, errs := Validate(imageLab(workload), specs.Host{})
		if len(errs) == 0 || errs[0].Field != field {
			t.Errorf("%s: %v, want %s", workload, errs, field)
		}
	}
}

// A participant's spec names no image, for a run or a search; a lab's
// may, through the lab.
func TestAParticipantNamesNoImage(t *testing.T) {
	for body, field := range map[string]string{
		`{"lanes": [{"workload": {"kind": "image", "image": "api:1"}}]}`:                              "workload.image",
		`{"lanes": [{"workload": {"kind": "spin"}}, {"workload": {"kind": "http", "command": "x"}}]}`: "workload.image",
	} {
		_, errs := Parse([]byte(body))
		if len(errs) != 1 || errs[0].Field != field {
			t.Errorf("%s: %v", body, errs)
		}
	}
	if _, errs := Parse([]byte(`{"lanes": [{"workload": {"kind": "image", "image": "api:1"}}]}`)); errs[0].Lane != 0 {
		t.Errorf("the refusal names lane %d", errs[0].Lane)
	}
	_, errs := ParseFind([]byte(`{"service": {"kind": "image", "image": "api:1", "port": 9090}, "load": {"rate": 10, "seconds": 4},
	  "target": {"p99_ms": 50}, "search": {"limit": "cpus", "min": "0.1", "max": "1", "resolution": "0.3"}}`))
	if len(errs) != 1 || errs[0].Field != "service.image" {
		t.Errorf("a participant's search naming an image: %v", errs)
	}
}
