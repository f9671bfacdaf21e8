package runner_test

import (
	"context"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/moby/moby/client"
)

// TestIOLabs runs the block IO labs as defined and asserts their verdicts,
// and that nothing of theirs is left on the engine.
func TestIOLabs(t *testing.T) {
	eng, _, _ := realEngine(t)
	for _, id := range []string{"io-write-bps", "io-read-limits", "noisy-neighbour-io"} {
		t.Run(id, func(t *testing.T) {
			m := newTestManager(t)
			r := startSpec(t, m, `{"lab": "`+id+`"}`)
			v := waitDone(t, r, 3*time.Minute)
			if v.State != runner.StateDone || v.Verdict == nil || !v.Verdict.Judged {
				t.Fatalf("state %s (%s), verdict %+v", v.State, v.Error, v.Verdict)
			}
			t.Logf("%s: %s", id, v.Verdict.Explanation)
			if !v.Verdict.Pass {
				t.Errorf("verdict failed: %s", v.Verdict.Explanation)
			}
			if n := labelled(t, r.ID()); n != 0 {
				t.Errorf("%d containers remain", n)
			}
			vols, err := eng.VolumeList(context.Background(), client.VolumeListOptions{Filters: make(client.Filters).Add("label", engine.LabelRun+"="+r.ID())})
			if err != nil || len(vols.Items) != 0 {
				t.Errorf("volumes remain: %v %v", vols.Items, err)
			}
		})
	}
}

func TestMemoryLab(t *testing.T) {
	m := newTestManager(t)
	r := startSpec(t, m, `{"lab": "memory-oom"}`)
	v := waitDone(t, r, 2*time.Minute)
	for i, want := range []bool{true, true, false} {
		if l := v.Lanes[i]; l.OOMKilled != want {
			t.Errorf("%s: oom_killed %v, want %v (exit %v)", l.Name, l.OOMKilled, want, l.ExitCode)
		}
	}
}

// TestWriteIOPSLab: the cgroup's count of write IOs stays at the 5 a second
// the throttle allows, whatever the block size.
func TestWriteIOPSLab(t *testing.T) {
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
		if med := median(iops); med > 5*1.15 || med < 5*0.5 {
			t.Errorf("lane %d: median %.2f write IOs per second, want about 5 (%v)", lane, med, iops)
		}
	}
}
