package web

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
)

func TestLabsOverTheAPI(t *testing.T) {
	srv, _ := newServer(t)
	var list struct{ Labs []experiments.Lab }
	if status := getJSON(t, srv.URL+"/api/labs", &list); status != http.StatusOK || len(list.Labs) == 0 {
		t.Fatalf("GET /api/labs: %d, %d labs", status, len(list.Labs))
	}
	for _, l := range list.Labs {
		if l.ID == "" || l.Title == "" || l.Seed == "" || len(l.Spec) == 0 {
			t.Errorf("lab %+v lacks a field", l)
		}
		res, err := testClient.Get(srv.URL + "/labs/" + l.ID)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(page), "docker run") {
			t.Errorf("GET /labs/%s: %d", l.ID, res.StatusCode)
		}
	}
	if status, body := postJSON(t, srv.URL+"/api/runs", `{"lab": "no-such-lab"}`); status != http.StatusBadRequest || !strings.Contains(string(body), `"field": "lab"`) {
		t.Errorf("unknown lab: %d %s", status, body)
	}

	// A lab runs as defined and comes back with predictions and a verdict.
	status, body := postJSON(t, srv.URL+"/api/runs", `{"lab": "shares-spare-cpu"}`)
	if status != http.StatusCreated {
		t.Fatalf("POST lab: %d %s", status, body)
	}
	var created struct{ ID string }
	_ = json.Unmarshal(body, &created)
	var v runner.RunView
	enginetest.WaitFor(t, 2*time.Minute, "the lab run to end", func() bool {
		getJSON(t, srv.URL+"/api/runs/"+created.ID, &v)
		return v.State != runner.StateQueued && v.State != runner.StateRunning
	})
	if v.Lab != "shares-spare-cpu" || v.Spec.Lab != "shares-spare-cpu" || v.Verdict == nil || !v.Verdict.Judged {
		t.Fatalf("lab %q verdict %+v", v.Lab, v.Verdict)
	}
	if v.Verdict.Metric != specs.MetricCPU || len(v.Verdict.Predicted) != 2 || len(v.Verdict.Measured) != 2 {
		t.Errorf("verdict %+v", v.Verdict)
	}
	for _, l := range v.Lanes {
		if l.PredictedCores == nil || l.MeasuredCores <= 0 {
			t.Errorf("lane %s: predicted %v measured %g", l.Name, l.PredictedCores, l.MeasuredCores)
		}
	}
}

func TestLimitsOverTheAPI(t *testing.T) {
	srv, _ := newServer(t)
	status, body := postJSON(t, srv.URL+"/api/runs", `{"name": "live", "duration": "30s",
	  "lanes": [{"name": "a", "workload": {"kind": "spin", "seconds": 4}, "limits": {"cpus": "1"}}]}`)
	if status != http.StatusCreated {
		t.Fatalf("%d %s", status, body)
	}
	var created struct{ ID string }
	_ = json.Unmarshal(body, &created)
	limits := func(lane int, change string) (int, []byte) {
		return postJSON(t, srv.URL+"/api/runs/"+created.ID+"/lanes/"+strconv.Itoa(lane)+"/limits", change)
	}
	enginetest.WaitFor(t, 30*time.Second, "the lane running", func() bool {
		var v runner.RunView
		getJSON(t, srv.URL+"/api/runs/"+created.ID, &v)
		return v.Lanes[0].State == runner.LaneRunning
	})
	tests := []struct {
		name, change string
		lane, status int
		part         string
	}{
		{"above the host", `{"cpus": "64"}`, 0, http.StatusBadRequest, "Range of CPUs"},
		{"not live", `{"cpu-period": "10000"}`, 0, http.StatusBadRequest, "cannot be changed while the lane runs"},
		{"unknown field", `{"cpu_shares": 2}`, 0, http.StatusBadRequest, "unknown field"},
		{"no such lane", `{"cpus": "0.5"}`, 7, http.StatusNotFound, "no such lane"},
		{"applied", `{"cpus": "0.5", "cpu-shares": "256"}`, 0, http.StatusOK, `"nano_cpus": 500000000`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := limits(tt.lane, tt.change)
			if status != tt.status || !strings.Contains(string(body), tt.part) {
				t.Errorf("status %d body %s: want %d containing %q", status, body, tt.status, tt.part)
			}
		})
	}
	var v runner.RunView
	enginetest.WaitFor(t, time.Minute, "the run to end", func() bool {
		getJSON(t, srv.URL+"/api/runs/"+created.ID, &v)
		return v.State == runner.StateDone
	})
	if len(v.Changes) != 1 || v.Changes[0].Applied.CPUShares != 256 || !strings.Contains(v.Changes[0].DockerUpdate, "docker update --cpus 0.5 --cpu-shares 256") {
		t.Errorf("changes %+v", v.Changes)
	}
	if status, _ := limits(0, `{"cpus": "0.25"}`); status != http.StatusConflict {
		t.Errorf("change after the lane ended: status %d, want 409", status)
	}
}
