package experiments

import (
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// The cfs-burst lab's service: 2 ms a request on 2 threads under --cpus
// 0.5, bursts of 40 every 0.4 s.
func labScenario(burst time.Duration) models.BurstScenario {
	return models.BurstScenario{Work: 2 * time.Millisecond, Threads: 2, Quota: 50 * time.Millisecond, Period: 100 * time.Millisecond,
		Burst: burst, Requests: 40, Every: 400 * time.Millisecond}
}

// The same bursts of the same CPU land at the same point of the period
// and are throttled alike; so the model spreads them over the period.
func TestPredictBurstsSpreadsThePhase(t *testing.T) {
	s := labScenario(0)
	s.Requests, s.Every = 30, 353*time.Millisecond
	p := models.PredictBursts(s)
	// 60 ms of CPU on 2 threads: throttled unless it starts 75 ms or
	// more into a period and needs at most 50 ms in the next one.
	if p.ThrottledPerBurst < 0.7 || p.ThrottledPerBurst > 0.95 {
		t.Errorf("%+v", p)
	}
}

func TestPredictBursts(t *testing.T) {
	// Without a burst, 80 ms of CPU against 50 ms a period: throttled once
	// a burst, unless it comes late enough in a period to spread over two
	// (from 75 ms in: at most 50 ms in each), and the last requests wait
	// for the next period.
	none := models.PredictBursts(labScenario(0))
	if none.ThrottledPerBurst < 0.75 || none.ThrottledPerBurst > 0.9 || none.P99 < 80*time.Millisecond || none.P99 > 130*time.Millisecond {
		t.Errorf("without a burst: %+v", none)
	}
	// With 50 ms of burst a period may spend 100 ms: the burst runs
	// through in 40 ms on its 2 threads.
	with := models.PredictBursts(labScenario(50 * time.Millisecond))
	if with.ThrottledPerBurst != 0 || with.P99 < 38*time.Millisecond || with.P99 > 42*time.Millisecond {
		t.Errorf("with a 50 ms burst: %+v", with)
	}
	// A burst that needs less than a period's quota is never throttled.
	small := labScenario(0)
	small.Requests = 20
	if p := models.PredictBursts(small); p.ThrottledPerBurst != 0 || p.P99 > 21*time.Millisecond {
		t.Errorf("a burst within the quota: %+v", p)
	}
}

func TestCPUBurstIsValidated(t *testing.T) {
	host := specs.Host{NCPU: 2}
	for _, c := range []struct {
		lane, says string
		host       specs.Host
	}{
		{`"limits": {"cpus": "0.5"}, "cpu_burst": "50ms"`, "", host},
		{`"limits": {"cpu-quota": "20000", "cpu-period": "50000"}, "cpu_burst": "20ms"`, "", host},
		{`"cpu_burst": "50ms"`, "give the lane a CPU quota", host},
		{`"limits": {"cpus": "0.5"}, "cpu_burst": "60ms"`, "at most the quota (50ms)", host},
		{`"limits": {"cpus": "0.5"}, "cpu_burst": "soon"`, "invalid duration", host},
		{`"limits": {"cpus": "0.5"}, "cpu_burst": "10us"`, "from 1ms", host},
		{`"limits": {"cpus": "0.5"}, "cpu_burst": "50ms"`, "compose mounts", specs.Host{NCPU: 2, Unsupported: map[string]string{"cpu_burst": "compose mounts them read-only"}}},
		{`"resources": {"limits": {"cpu": "500m"}}, "cpu_burst": "50ms"`, "kubernetes/kubernetes#104516", specs.Host{NCPU: 2, Kubernetes: true}},
	} {
		spec, errs := Parse([]byte(`{"lanes": [{"name": "svc", "workload": {"kind": "spin"}, ` + c.lane + `}]}`))
		if errs != nil {
			t.Fatalf("%s: %v", c.lane, errs)
		}
		plan, errs := Validate(spec, c.host)
		switch {
		case c.says == "" && errs != nil:
			t.Errorf("%s: %v", c.lane, errs)
		case c.says == "" && plan.Lanes[0].Resources.CPUBurstUs == 0:
			t.Errorf("%s: no burst planned", c.lane)
		case c.says != "" && (len(errs) != 1 || errs[0].Field != "cpu_burst" || errs[0].Lane != 0 || !strings.Contains(errs[0].Message, c.says)):
			t.Errorf("%s: %v, want an error on lane 0's cpu_burst saying %q", c.lane, errs, c.says)
		}
	}
}
