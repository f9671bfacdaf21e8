package main

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/enginetest"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads /metrics with Prometheus' own text parser.
func scrape(t *testing.T, base, token string) (int, map[string]*dto.MetricFamily) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return res.StatusCode, nil
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return res.StatusCode, mf
}

// laneValue is a lane's value of a metric, by the run and the lane's
// index.
func laneValue(mf map[string]*dto.MetricFamily, name, run, lane string) (float64, bool) {
	f := mf[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["run"] == run && labels["lane"] == lane {
			if c := m.GetCounter(); c != nil {
				return c.GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// TestMetricsOfAThrottledRun: the real server, behind a metrics token,
// runs a lane of two threads held to --cpus 0.3. /metrics, parsed with
// Prometheus' text parser, gives that lane's
// container_cpu_cfs_throttled_periods_total, rising from one scrape to
// the next, beside its CPU time and its quota; without the token it is
// refused.
func TestMetricsOfAThrottledRun(t *testing.T) {
	bin, err := enginetest.BuildBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const token = "metrics-0123456789-token"
	tokenFile := filepath.Join(dir, "metrics-token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, base := startServer(t, bin, filepath.Join(dir, "data"), "-metrics-token-file", tokenFile)
	if status, _ := scrape(t, base, ""); status != http.StatusUnauthorized {
		t.Errorf("/metrics without its token: %d, want 401", status)
	}
	id := submit(t, base, `{"name": "throttled", "duration": "20s", "lanes": [{"name": "hog", "workload": {"kind": "spin", "threads": 2, "seconds": 20}, "limits": {"cpus": "0.3"}}]}`)
	var first float64
	enginetest.WaitFor(t, time.Minute, "the lane's throttled periods in /metrics", func() bool {
		_, mf := scrape(t, base, token)
		v, ok := laneValue(mf, "container_cpu_cfs_throttled_periods_total", id, "0")
		first = v
		return ok && v > 0
	})
	time.Sleep(3 * time.Second)
	_, mf := scrape(t, base, token)
	second, _ := laneValue(mf, "container_cpu_cfs_throttled_periods_total", id, "0")
	if second <= first {
		t.Errorf("throttled periods %g, then %g three seconds later: not rising", first, second)
	}
	cpu, ok := laneValue(mf, "container_cpu_usage_seconds_total", id, "0")
	quota, qok := laneValue(mf, "container_spec_cpu_quota", id, "0")
	if !ok || cpu <= 0 || !qok || quota != 30000 {
		t.Errorf("the lane's CPU seconds %g (%v) and quota %g (%v); want some, and 30000 µs", cpu, ok, quota, qok)
	}
	for _, name := range []string{"limitlab_runs", "limitlab_queue_length", "limitlab_engines", "limitlab_store_bytes", "limitlab_viewers",
		"limitlab_sampling_ticks_total", "limitlab_sampling_ticks_missed_total", "limitlab_sampling_lag_seconds", "process_resident_memory_bytes"} {
		if mf[name] == nil {
			t.Errorf("/metrics has no %s", name)
		}
	}
	if f := mf["limitlab_sampling_ticks_total"]; f == nil || f.Metric[0].GetCounter().GetValue() <= 0 {
		t.Error("the sampling clock's ticks are not counted")
	}
	if f := mf["limitlab_sampling_lag_seconds"]; f == nil || f.Metric[0].GetSummary().GetSampleCount() == 0 {
		t.Error("the samples' lag is not timed")
	}
	t.Logf("the throttled lane: %g throttled periods, then %g; %g CPU seconds", first, second, cpu)
	var v struct{ Ended bool }
	waitEnded(t, base, id, time.Minute, &v)
}
