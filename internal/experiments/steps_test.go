package experiments

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// evenSamples are n samples of dt seconds each from t0, every one with the
// same cores and throttling.
func evenSamples(t0, dt float64, n int, cores, periods, throttled float64) []models.CoreSample {
	var out []models.CoreSample
	for i := 1; i <= n; i++ {
		out = append(out, models.CoreSample{T: t0 + float64(i)*dt, DT: dt, Cores: cores, Periods: periods, ThrottledPeriods: throttled})
	}
	return out
}

func TestCheckEval(t *testing.T) {
	half := evenSamples(0, 0.25, 40, 0.5, 2.5, 2) // 10 s at half a CPU, throttled in 80%
	idle := evenSamples(0, 0.25, 40, 0, 0, 0)     // a lane that does not run
	late := append(evenSamples(0, 0.25, 20, 1, 2.5, 0), evenSamples(5, 0.25, 20, 0.25, 2.5, 2.5)...)
	for _, tc := range []struct {
		name        string
		check       specs.Check
		samples     []models.CoreSample
		since       float64
		full, holds bool
		value       float64
		over        bool
	}{
		{"cores within", specs.Check{Metric: specs.CheckCores, Op: "within", Value: 0.5, Tolerance: 0.1}, half, 0, true, true, 0.5, false},
		{"cores within, off", specs.Check{Metric: specs.CheckCores, Op: "within", Value: 1, Tolerance: 0.1}, half, 0, true, false, 0.5, false},
		{"throttled above", specs.Check{Metric: specs.CheckThrottled, Op: ">", Value: 0.5}, half, 0, true, true, 0.8, false},
		{"throttled below", specs.Check{Metric: specs.CheckThrottled, Op: "<", Value: 0.5}, half, 0, true, false, 0.8, false},
		{"not enough since the step began", specs.Check{Metric: specs.CheckCores, Op: ">", Value: 0.1}, half, 8.5, false, false, 0, false},
		{"no samples since", specs.Check{Metric: specs.CheckCores, Op: ">", Value: 0.1}, half, 11, false, false, 0, false},
		{"a lane that does not run is not judged on throttling", specs.Check{Metric: specs.CheckThrottled, Op: "<", Value: 0.5}, idle, 0, false, false, 0, false},
		{"the window is the last seconds", specs.Check{Metric: specs.CheckCores, Op: "within", Value: 0.25, Tolerance: 0.05}, late, 0, true, true, 0.25, false},
		{"a longer window mixes both", specs.Check{Metric: specs.CheckCores, Op: "<", Value: 0.9, Seconds: 10}, late, 0, true, true, 0.625, false},
		{"a lane shorter than the window is judged once it is over", specs.Check{Metric: specs.CheckCores, Op: "within", Value: 0.5, Tolerance: 0.1, Seconds: 20}, half, 0, true, true, 0.5, true},
		{"but not while it runs", specs.Check{Metric: specs.CheckCores, Op: "within", Value: 0.5, Tolerance: 0.1, Seconds: 20}, half, 0, false, false, 0, false},
		{"nor on too little of it", specs.Check{Metric: specs.CheckCores, Op: ">", Value: 0.1}, half, 9.8, false, false, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full, value, holds := EvalCheck(tc.check, tc.samples, tc.since, tc.over)
			if full != tc.full || holds != tc.holds || (full && abs(value-tc.value) > 1e-9) {
				t.Errorf("Eval = full %v, value %g, holds %v; want %v, %g, %v", full, value, holds, tc.full, tc.value, tc.holds)
			}
		})
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func TestParseLabFileErrors(t *testing.T) {
	good := `{
  "id": "my-lab",
  "title": "Mine",
  "topic": "cpu",
  "steps": [
    {"prompt": "Watch", "check": {"lane": "a", "metric": "cores", "op": ">", "value": 0.5}}
  ],
  "spec": {
    "name": "mine",
    "lanes": [
      {"name": "a", "workload": {"kind": "spin", "seconds": 5}, "limits": {"cpus": "0.5"}}
    ]
  }
}`
	if l, broken := ParseLabFile("mine.json", []byte(good)); broken != nil {
		t.Fatalf("a good lab file is refused: %v", broken)
	} else if l.ID != "my-lab" || l.File != "mine.json" || len(l.Steps) != 1 {
		t.Fatalf("lab = %+v", l)
	}
	for _, tc := range []struct {
		name, from, to string
		field          string
		line           int
		message        string
	}{
		{"malformed", `"title": "Mine",`, `"title": "Mine"`, "", 4, "malformed JSON"},
		{"unknown field", `"topic": "cpu",`, `"topic": "cpu", "colour": "red",`, "colour", 4, "unknown field"},
		{"bad id", `"my-lab"`, `"My Lab"`, "id", 2, "lowercase"},
		{"bad topic", `"topic": "cpu"`, `"topic": "GPU!"`, "topic", 4, "want a topic of 1 to 32 lowercase letters"},
		{"bad limit", `"cpus": "0.5"`, `"cpus": "lots"`, "spec.lanes[0].cpus", 11, "cpus"},
		{"bad workload", `"seconds": 5`, `"seconds": -5`, "spec.lanes[0].workload.seconds", 11, ""},
		{"check on no lane", `"lane": "a", "metric"`, `"lane": "b", "metric"`, "steps[0].check.lane", 6, `no lane is named "b"`},
		{"bad op", `"op": ">"`, `"op": ">="`, "steps[0].check.op", 6, "want"},
		{"step with nothing to do", `, "check": {"lane": "a", "metric": "cores", "op": ">", "value": 0.5}`, ``, "steps[0].prompt", 6, "a change, a check or both"},
		{"change not live", `"prompt": "Watch",`, `"prompt": "Watch", "change": {"lane": "a", "limits": {"cpu-period": "50000"}},`, "steps[0].change.limits.cpu-period", 6, "cannot be changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(good, tc.from, tc.to, 1)
			if src == good {
				t.Fatalf("the case changes nothing")
			}
			_, broken := ParseLabFile("mine.json", []byte(src))
			if broken == nil {
				t.Fatal("refused nothing")
			}
			if broken.File != "mine.json" || broken.Field != tc.field || broken.Line != tc.line || !strings.Contains(broken.Message, tc.message) {
				t.Errorf("got %q (field %q, line %d); want field %q, line %d, a message with %q", broken.Error(), broken.Field, broken.Line, tc.field, tc.line, tc.message)
			}
		})
	}
}

func TestCatalogRefusesATakenID(t *testing.T) {
	l, broken := ParseLabFile("mine.json", []byte(builtinJSON(t, "cpus-ladder")))
	if broken != nil {
		t.Fatal(broken)
	}
	c := NewCatalog([]Lab{l}, nil)
	if len(c.Labs()) != len(builtin) || len(c.Broken()) != 1 || !strings.Contains(c.Broken()[0].Message, "built-in") {
		t.Fatalf("labs %d, broken %+v", len(c.Labs()), c.Broken())
	}
	l.ID = "my-ladder"
	c = NewCatalog([]Lab{l, l}, nil)
	if _, ok := c.Lab("my-ladder"); !ok || len(c.Broken()) != 1 || !strings.Contains(c.Broken()[0].Message, "mine.json") {
		t.Fatalf("broken %+v", c.Broken())
	}
}

func builtinJSON(t *testing.T, id string) string {
	b, err := labFiles.ReadFile("labs/" + id + ".json")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLabFileRoundTrips(t *testing.T) {
	for _, l := range builtin {
		out := LabFile(LabID(l.Title, "ab12cd"), l.LabSpec(), &l)
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		back, broken := ParseLabFile("export.json", b)
		if broken != nil {
			t.Fatalf("%s: the exported lab file is refused: %v\n%s", l.ID, broken, b)
		}
		if back.Title != l.Title || len(back.Steps) != len(l.Steps) || back.Topic != l.Topic || !strings.HasSuffix(back.ID, "-ab12cd") {
			t.Errorf("%s: read back as %+v", l.ID, back)
		}
	}
	spec := specs.Spec{Name: "  My   disk test!", Lanes: []specs.Lane{{Name: "w", Workload: specs.Workload{Kind: specs.KindDiskWrite, MB: 8}, Limits: specs.Limits{DeviceWriteBps: "auto:5mb"}}}}
	out := LabFile(LabID(spec.Name, "x1"), spec, nil)
	b, _ := json.Marshal(out)
	if back, broken := ParseLabFile("mine.json", b); broken != nil || back.ID != "my-disk-test-x1" || back.Topic != "block-io" {
		t.Fatalf("custom spec's lab file: %+v %v", back, broken)
	}
}

func TestWelch(t *testing.T) {
	// Welch's own kind of example: two samples of 15 with unequal spread;
	// the figures were worked out by hand (Welch–Satterthwaite df, and the
	// t distribution's tail integrated numerically).
	a := []float64{27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4}
	b := []float64{27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4}
	tv, df, p, ok := models.Welch(a, b)
	if !ok || abs(tv+2.4554) > 1e-3 || abs(df-24.9885) > 1e-3 || abs(p-0.02138) > 1e-4 {
		t.Errorf("Welch = t %.4f, df %.4f, p %.5f, %v; want -2.4554, 24.9885, 0.02138", tv, df, p, ok)
	}
	if _, _, _, ok := models.Welch([]float64{1}, b); ok {
		t.Error("one value is no sample")
	}
	if _, _, _, ok := models.Welch([]float64{2, 2}, []float64{3, 3}); ok {
		t.Error("no spread at all cannot be tested")
	}
	lanes := []models.SeriesLane{{Name: "a", Values: a, Stats: models.Summarize(a)}, {Name: "b", Values: b, Stats: models.Summarize(b)}, {Name: "a again", Values: a, Stats: models.Summarize(a)}}
	cs := models.Compare(lanes, "s")
	if len(cs) != 2 || !cs[0].Differ || cs[1].Differ || !strings.Contains(cs[0].Text, "differs from a beyond the noise") {
		t.Errorf("comparisons %+v", cs)
	}
	if s := models.Summarize([]float64{1, 2, 3, 4}); s.N != 4 || s.Mean != 2.5 || abs(s.SD-1.2910) > 1e-4 || s.Min != 1 || s.Max != 4 {
		t.Errorf("Summarize = %+v", s)
	}
}

func TestRoundPlanAlternatesSequentialOrder(t *testing.T) {
	p := specs.Plan{Mode: specs.Sequential, Groups: [][]int{{0}, {1, 2}, {3}}}
	if g := models.RoundPlan(p, 1).Groups; g[0][0] != 3 || g[2][0] != 0 || p.Groups[0][0] != 0 {
		t.Errorf("round 1 groups %v (plan's %v)", g, p.Groups)
	}
	if g := models.RoundPlan(p, 2).Groups; g[0][0] != 0 {
		t.Errorf("round 2 groups %v", g)
	}
	p.Mode = specs.Parallel
	if g := models.RoundPlan(p, 1).Groups; g[0][0] != 0 {
		t.Errorf("parallel round 1 groups %v", g)
	}
}

func TestJudgeRepeats(t *testing.T) {
	v := func(pass bool, m ...float64) *models.Verdict {
		return &models.Verdict{Judged: true, Pass: pass, Metric: specs.MetricWallTime, Predicted: []float64{1, 2}, Measured: m, Tolerance: 0.1}
	}
	j := models.JudgeRepeats([]*models.Verdict{v(true, 1, 2.1), v(false, 1, 2.3), v(true, 1, 1.9), {Judged: false}})
	if j == nil || !j.Judged || !j.Pass || abs(j.Measured[1]-2.1) > 1e-9 || !strings.Contains(j.Explanation, "passed in 2 of 3") {
		t.Errorf("JudgeRepeats = %+v", j)
	}
	if models.JudgeRepeats([]*models.Verdict{nil, {Judged: false}}) != nil {
		t.Error("nothing judged, yet a verdict")
	}
	noisy := v(false, 1, 1.2)
	noisy.Inconclusive, noisy.Noise = true, "1.9 cores of other work"
	j = models.JudgeRepeats([]*models.Verdict{v(true, 1, 2.1), noisy, v(true, 1, 1.9)})
	if j == nil || !j.Pass || j.Inconclusive || abs(j.Measured[1]-2) > 1e-9 || !strings.Contains(j.Explanation, "Over 2 runs") || !strings.Contains(j.Explanation, "1 more") {
		t.Errorf("a series with a noisy run is judged over the others: %+v", j)
	}
	j = models.JudgeRepeats([]*models.Verdict{noisy, noisy})
	if j == nil || !j.Inconclusive || j.Pass || !strings.Contains(j.Explanation, "Each of the 2 runs") || j.Noise == "" {
		t.Errorf("a series of noisy runs: %+v", j)
	}
}

// A guided step's change is shown as it is sent: a pod lane's resize as
// kubectl's patch of the resize subresource, a container's as docker
// update.
func TestAStepsChangeNamesItsCommand(t *testing.T) {
	lab, ok := LabByID("k8s-resize")
	if !ok {
		t.Fatal("no k8s-resize lab")
	}
	var got []string
	for _, s := range lab.Steps {
		if s.Change != nil {
			got = append(got, s.Change.Text())
		}
	}
	want := `kubectl patch pod svc --subresource resize --patch '{"spec":{"containers":[{"name":"workload","resources":{"limits":{"cpu":"1500m"}}}]}}'`
	if len(got) != 1 || got[0] != want {
		t.Errorf("the resize step shows %q, want %q", got, want)
	}
	c := specs.StepChange{Lane: "burner", Limits: specs.Limits{CPUs: "0.25"}}
	if s := c.Text(); s != "docker update --cpus 0.25 burner" {
		t.Errorf("a container's change shows %q", s)
	}
}
