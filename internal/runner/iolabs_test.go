package runner_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/moby/moby/client"
)

// TestIOLabs runs the block IO labs as defined and asserts their verdicts,
// and that nothing of theirs is left on the engine.
func TestIOLabs(t *testing.T) {
	eng, _, _ := realEngine(t)
	for _, id := range []string{"io-write-bps", "io-read-limits", "noisy-neighbour-io"} {
		t.Run(id, func(t *testing.T) {
			var runs []string // every attempt's, checked for leaks once at the end
			enginetest.Measure(t, id, func(t testing.TB) {
				m := newTestManager(t)
				r := startSpec(t, m, `{"lab": "`+id+`"}`)
				runs = append(runs, r.ID())
				v := waitDone(t, r, 3*time.Minute)
				if v.State != runner.StateDone || v.Verdict == nil || !v.Verdict.Judged {
					t.Fatalf("state %s (%s), verdict %+v", v.State, v.Error, v.Verdict)
				}
				t.Logf("%s: %s", id, v.Verdict.Explanation)
				enginetest.Figure(t, id+" (MiB/s or ops/s)", "%s (limits %s)", enginetest.Ratios(v.Verdict.Measured), enginetest.Ratios(v.Verdict.Predicted))
				switch vd := v.Verdict; {
				case vd.Pass:
				case vd.Inconclusive && vd.Held:
					t.Logf("inconclusive on the host's load, and as predicted all the same: %s", vd.Explanation)
				case vd.Inconclusive && vd.Noise != "" && id == "noisy-neighbour-io" && vd.Measured[1] < 0.5:
					// The neighbours' harm showed; whether the victim
					// recovered the disk's own noise could decide, and the
					// verdict says so rather than fail or pass.
					t.Logf("inconclusive, as the verdict says: %s", vd.Noise)
				default:
					t.Errorf("verdict failed: %s", vd.Explanation)
				}
			})
			for _, id := range runs {
				if n := labelled(t, id); n != 0 {
					t.Errorf("run %s: %d containers remain", id, n)
				}
				vols, err := eng.VolumeList(context.Background(), client.VolumeListOptions{Filters: make(client.Filters).Add("label", engine.LabelRun+"="+id)})
				if err != nil || len(vols.Items) != 0 {
					t.Errorf("run %s: volumes remain: %v %v", id, vols.Items, err)
				}
			}
		})
	}
}

func TestMemoryLab(t *testing.T) {
	m := newTestManager(t)
	r := startSpec(t, m, `{"lab": "memory-oom"}`)
	v := waitDone(t, r, 2*time.Minute)
	var killed []string
	for _, l := range v.Lanes {
		killed = append(killed, fmt.Sprintf("%s: %v", l.Name, l.OOMKilled))
	}
	enginetest.Figure(t, "memory-oom (OOM killed)", "%s", strings.Join(killed, "; "))
	for i, want := range []bool{true, true, false} {
		if l := v.Lanes[i]; l.OOMKilled != want {
			t.Errorf("%s: oom_killed %v, want %v (exit %v)", l.Name, l.OOMKilled, want, l.ExitCode)
		}
	}
}

// TestWriteIOPSLab: the cgroup's count of write IOs stays at the 5 a second
// the throttle allows, whatever the block size.
func TestWriteIOPSLab(t *testing.T) {
	enginetest.Measure(t, "the io-write-iops lab", writeIOPSLab)
}

func writeIOPSLab(t testing.TB) {
	m := newTestManager(t)
	r := startSpec(t, m, `{"lab": "io-write-iops"}`)
	v := waitDone(t, r, 3*time.Minute)
	if v.State != runner.StateDone {
		t.Fatalf("state %s: %s", v.State, v.Error)
	}
	perLane := map[int][]float64{}
	for _, s := range samplesOf(t, r) {
		perLane[s.Lane] = append(perLane[s.Lane], s.WriteIOPS)
	}
	for lane, iops := range perLane {
		enginetest.Figure(t, fmt.Sprintf("io-write-iops lane %d (median write IOs/s, limit 5)", lane+1), "%.2f", median(iops))
		if med := median(iops); med > 5*1.15 || med < 5*0.5 {
			t.Errorf("lane %d: median %.2f write IOs per second, want about 5 (%v)", lane, med, iops)
		}
	}
}

// TestIOWeightLab runs the weight lab where the host's probe says weights
// work (BFQ on the data root's disk; the cgroup v2 VM), and there its
// verdict must hold. Where the probe says they do not (this bench: the
// disk runs mq-deadline and the engine discards the weight), the lab is
// refused before anything starts, naming the field and the probe's reason.
func TestIOWeightLab(t *testing.T) {
	enginetest.Measure(t, "the io-weight lab", ioWeightLab)
}

func ioWeightLab(t testing.TB) {
	m := newTestManager(t)
	h := m.Pool().Host()
	spec, errs := experiments.Parse([]byte(`{"lab": "io-weight"}`))
	if errs != nil {
		t.Fatal(errs)
	}
	p, errs := experiments.Validate(spec, h.Experiments())
	if !h.IOWeight().Supported {
		named := false
		for _, e := range errs {
			named = named || e.Field == "blkio-weight" && e.Lane >= 0 && strings.Contains(e.Message, h.IOWeight().Reason)
		}
		if !named {
			t.Fatalf("weights unsupported (%s), and the lab's validation says %v", h.IOWeight().Reason, errs)
		}
		t.Logf("refused, as it should be here: %v", errs)
		enginetest.Figure(t, "io-weight (share while both write)", "refused: weights unsupported (%s)", h.IOWeight().Reason)
		return
	}
	if errs != nil {
		t.Fatalf("weights supported, and the lab is refused: %v", errs)
	}
	r, err := m.SubmitFrom(spec, p, "", "")
	if err != nil {
		t.Fatal(err)
	}
	v := waitDone(t, r, 5*time.Minute)
	if v.State != runner.StateDone || v.Verdict == nil || !v.Verdict.Judged {
		t.Fatalf("state %s (%s), verdict %+v", v.State, v.Error, v.Verdict)
	}
	for _, l := range v.Lanes {
		var rates []string
		for _, s := range samplesOf(t, r) {
			if s.Lane == l.Index {
				rates = append(rates, fmt.Sprintf("%.1f:%.0f", s.T, s.WriteMiBs))
			}
		}
		t.Logf("%s: ran %.2f–%.2f s, MiB/s written by time: %s", l.Name, l.StartedAt, l.EndedAt, strings.Join(rates, " "))
	}
	t.Logf("io-weight: %s", v.Verdict.Explanation)
	enginetest.Figure(t, "io-weight (share while both write)", "%s (weights %s)", enginetest.Ratios(v.Verdict.Measured), enginetest.Ratios(v.Verdict.Predicted))
	switch {
	case v.Verdict.Pass:
	case enginetest.EmulatedCPU() && len(v.Verdict.Measured) == 2 && v.Verdict.Measured[1] >= 2*v.Verdict.Measured[0]:
		// Under emulation each one-at-a-time O_DIRECT write costs the
		// writer emulated CPU time, so the lighter lane is often not ready
		// when BFQ would serve it: single runs there measured 1 : 3.2 to
		// 1 : 8.0. The weights must still plainly be honoured (without
		// them the lanes share 1 : 1).
		t.Logf("on emulated CPUs, not within the tolerance (not required), the weights honoured: %s", v.Verdict.Explanation)
	default:
		t.Errorf("verdict failed: %s", v.Verdict.Explanation)
	}
}
