package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/moby/moby/client"
)

func hostSamplesOf(t testing.TB, r *runner.Run) []runner.HostSample {
	t.Helper()
	var out []runner.HostSample
	for _, b := range r.Hub().History() {
		var msg runner.Message
		if err := json.Unmarshal(b, &msg); err != nil {
			t.Fatal(err)
		}
		if msg.Type == runner.KindHost && msg.Host != nil {
			out = append(out, *msg.Host)
		}
	}
	return out
}

func runLab(t testing.TB, id string) runner.RunView {
	t.Helper()
	m := newTestManager(t)
	lab, ok := experiments.LabByID(id)
	if !ok {
		t.Fatalf("no lab %s", id)
	}
	spec := lab.LabSpec()
	plan, errs := m.Pool().Validate(spec)
	if errs != nil {
		t.Fatal(errs)
	}
	r, err := m.SubmitFrom(spec, plan, "", "")
	if err != nil {
		t.Fatal(err)
	}
	return waitDone(t, r, 3*time.Minute)
}

// Two busy loops outside Docker beside the noisy-neighbour lab, the
// first run of a series of two: its verdict is inconclusive, naming the
// foreign load, and the quiet check before it saw a busy host; the second
// run, on a quiet host, is judged as before, and the series is judged
// over it alone, saying so.
func TestNoisyHostMakesAVerdictInconclusive(t *testing.T) {
	enginetest.Measure(t, "a noisy run, then a quiet one", noisyThenQuiet)
}

func noisyThenQuiet(t testing.TB) {
	m := newTestManager(t)
	lab, ok := experiments.LabByID("noisy-neighbour-cpu")
	if !ok {
		t.Fatal("no lab noisy-neighbour-cpu")
	}
	spec := lab.LabSpec()
	spec.Repeat = 2
	plan, errs := m.Pool().Validate(spec)
	if errs != nil {
		t.Fatal(errs)
	}
	_, stop := enginetest.BusyLoops(t, 2)
	r, err := m.SubmitFrom(spec, plan, "", "")
	if err != nil {
		t.Fatal(err)
	}
	v := waitDone(t, r, 3*time.Minute)
	stop()
	if v.State != runner.StateDone || v.Verdict == nil || !v.Verdict.Judged {
		t.Fatalf("beside busy loops: %s %s, verdict %+v", v.State, v.Error, v.Verdict)
	}
	if !v.Verdict.Inconclusive || v.Verdict.Pass || !strings.Contains(v.Verdict.Noise, "cores of other work") {
		t.Errorf("beside two busy loops the verdict is %+v", v.Verdict)
	}
	if v.Noise == nil || !v.Noise.Measured || v.Noise.Quiet == nil || !v.Noise.Quiet.Busy || v.Noise.ForeignCores < 0.5 {
		t.Errorf("the run's noise beside two busy loops: %+v (quiet %+v)", v.Noise, v.Noise.Quiet)
	}
	enginetest.Figure(t, "noisy-neighbour-cpu beside two busy loops", "foreign %.2f cores (quiet check %.2f): %s",
		v.Noise.ForeignCores, v.Noise.Quiet.ForeignCores, v.Verdict.Explanation)

	if v.Series == nil || len(v.Series.Runs) != 2 {
		t.Fatalf("series %+v", v.Series)
	}
	var q runner.RunView
	waitFor(t, 3*time.Minute, "the series' second run to end", func() bool {
		q, _ = m.Archive().View(v.Series.Runs[1])
		return q.State.Ended()
	})
	if q.Verdict == nil || q.Verdict.Inconclusive {
		t.Fatalf("on a quiet host the verdict is %+v (noise %+v)", q.Verdict, q.Noise)
	}
	enginetest.CheckVerdict(t, q.Verdict)
	if q.Noise.Quiet == nil || q.Noise.Quiet.Busy {
		t.Errorf("the quiet check on a quiet host: %+v", q.Noise.Quiet)
	}
	enginetest.Figure(t, "noisy-neighbour-cpu on a quiet host", "foreign %.2f cores (quiet check %.2f): %s",
		q.Noise.ForeignCores, q.Noise.Quiet.ForeignCores, q.Verdict.Explanation)

	sv, ok := m.Archive().Series(v.ID)
	if !ok || sv.Done != 2 || sv.Noisy != 1 || sv.Runs[0].Noise == "" || sv.Runs[1].Noise != "" {
		t.Fatalf("the series: %+v", sv)
	}
	if sv.Lanes[0].Stats.N != 1 || sv.Verdict == nil || sv.Verdict.Inconclusive || !strings.Contains(sv.Verdict.Explanation, "quiet runs only: 1 more") {
		t.Errorf("the series is not judged over its quiet run alone: lanes %+v, verdict %+v", sv.Lanes, sv.Verdict)
	}
	t.Logf("series: %s", sv.Verdict.Explanation)
}

// procTicks reads fields of a /proc stat line as numbers.
func procFields(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if i := strings.LastIndexByte(string(b), ')'); i >= 0 && strings.HasSuffix(path, "/stat") && !strings.HasSuffix(path, "/proc/stat") {
		return strings.Fields(string(b[i+1:]))
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.Fields(line)
}

func atoi(t testing.TB, s string) float64 {
	t.Helper()
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// handRead is what the test reads of /proc itself at one instant: the
// host's steal, a busy loop's CPU, and a lane's threads' run delay, in
// seconds.
type handRead struct {
	at                time.Time
	steal, loop, wait float64
}

func readByHand(t testing.TB, loop, lane int) handRead {
	t.Helper()
	h := handRead{at: time.Now()}
	h.steal = atoi(t, procFields(t, "/proc/stat")[8]) / 100
	f := procFields(t, fmt.Sprintf("/proc/%d/stat", loop))
	h.loop = (atoi(t, f[11]) + atoi(t, f[12])) / 100
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", lane))
	for _, p := range tasks {
		if b, err := os.ReadFile(p); err == nil {
			if fs := strings.Fields(string(b)); len(fs) > 1 {
				h.wait += atoi(t, fs[1]) / 1e9
			}
		}
	}
	return h
}

// The host figures agree with /proc read by hand around a run: one busy
// loop outside Docker beside two lanes that leave the host room is a core
// of foreign load (its own CPU time, read from its /proc/<pid>/stat); the
// steal is /proc/stat's; a lane's wait is its threads' schedstat.
func TestHostLoadAgreesWithProc(t *testing.T) {
	c, _, _ := realEngine(t)
	loops, _ := enginetest.BusyLoops(t, 1)
	m := newTestManager(t)
	r := startSpec(t, m, `{"name": "beside a loop", "duration": "60s", "lanes": [
	  {"name": "a", "workload": {"kind": "spin", "threads": 2, "seconds": 12}, "limits": {"cpus": "0.25"}},
	  {"name": "b", "workload": {"kind": "spin", "seconds": 12}, "limits": {"cpus": "0.25"}}]}`)
	waitFor(t, time.Minute, "both lanes sampled", func() bool { return len(hostSamplesOf(t, r)) > 1 })
	ins, err := c.ContainerInspect(context.Background(), r.View().Lanes[0].Container, client.ContainerInspectOptions{})
	if err != nil || ins.Container.State == nil {
		t.Fatal(err)
	}
	lanePid := ins.Container.State.Pid
	start := r.View().StartedAt
	a := readByHand(t, loops[0], lanePid)
	time.Sleep(7 * time.Second) // the host's figures are read once a second
	b := readByHand(t, loops[0], lanePid)
	v := waitDone(t, r, time.Minute)
	if v.State != runner.StateDone {
		t.Fatalf("%s %s", v.State, v.Error)
	}
	from, to := a.at.Sub(start).Seconds(), b.at.Sub(start).Seconds()
	var foreign, steal, w float64
	for _, s := range hostSamplesOf(t, r) {
		if s.T-s.DT >= from && s.T <= to {
			foreign, steal, w = foreign+s.ForeignCores*s.DT, steal+s.StealCores*s.DT, w+s.DT
		}
	}
	var wait, ww float64
	for _, s := range samplesOf(t, r) {
		if s.Lane == 0 && s.Wait != nil && s.T-s.WaitOver >= from && s.T <= to {
			wait, ww = wait+*s.Wait*s.WaitOver, ww+s.WaitOver
		}
	}
	if w < 5 || ww < 5 {
		t.Fatalf("host samples over %.1f s and lane samples over %.1f s of the 7 s read by hand", w, ww)
	}
	dt := b.at.Sub(a.at).Seconds()
	loopCores, handSteal, handWait := (b.loop-a.loop)/dt, (b.steal-a.steal)/dt, 1000*(b.wait-a.wait)/dt
	gotForeign, gotSteal, gotWait := foreign/w, steal/w, wait/ww
	t.Logf("by hand: loop %.3f cores, steal %.3f, lane a waited %.1f ms/s; Limit Lab: foreign %.3f, steal %.3f, wait %.1f ms/s",
		loopCores, handSteal, handWait, gotForeign, gotSteal, gotWait)
	// /proc/stat and a process's times count in ticks of 10 ms.
	if d := gotForeign - loopCores; d > 0.1 || d < -0.1 {
		t.Errorf("foreign load %.3f cores; the busy loop used %.3f", gotForeign, loopCores)
	}
	if d := gotSteal - handSteal; d > 0.05 || d < -0.05 {
		t.Errorf("steal %.3f cores; /proc/stat says %.3f", gotSteal, handSteal)
	}
	if d := gotWait - handWait; d > 0.2*handWait+5 || d < -0.2*handWait-5 {
		t.Errorf("lane a waited %.1f ms/s; its threads' schedstat says %.1f", gotWait, handWait)
	}
	if l := v.Lanes[0]; l.WaitSeconds == nil {
		t.Errorf("lane a's results carry no wait")
	}
}
