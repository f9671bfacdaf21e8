package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A pod's container is found where kubelet puts it, by the pod's uid and
// the container's id, in each QoS class and driver layout, v1 and v2.
func TestFindPodCgroup(t *testing.T) {
	uid, cid := "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0", strings.Repeat("c", 64)
	for _, tt := range []struct {
		name string
		v2   bool
		rel  string
	}{
		{"v1 burstable", false, "kubepods/burstable/pod" + uid + "/" + cid},
		{"v1 guaranteed", false, "kubepods/pod" + uid + "/" + cid},
		{"v2 systemd besteffort", true, "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0b1c2d3e_4f50_6172_8394_a5b6c7d8e9f0.slice/cri-containerd-" + cid + ".scope"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			var want string
			if tt.v2 {
				os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu memory"), 0o644)
				want = filepath.Join(root, tt.rel)
				os.MkdirAll(want, 0o755)
				os.WriteFile(filepath.Join(want, "cpu.stat"), nil, 0o644)
			} else {
				for _, c := range v1Controllers {
					os.MkdirAll(filepath.Join(root, c, tt.rel), 0o755)
				}
				want = filepath.Join(root, "cpu", tt.rel)
				os.WriteFile(filepath.Join(want, "cgroup.procs"), []byte("4242\n"), 0o644)
			}
			cg, err := FindPodCgroup(root, uid, cid)
			if err != nil {
				t.Fatal(err)
			}
			defer cg.Close()
			got := cg.dirs["cpu"]
			if tt.v2 {
				got = cg.dirs["unified"]
			}
			if got != want {
				t.Errorf("found %s, want %s", got, want)
			}
			if !tt.v2 && PodPid(root, uid, cid) != 4242 {
				t.Errorf("PodPid = %d", PodPid(root, uid, cid))
			}
		})
	}
	if _, err := FindPodCgroup(t.TempDir(), "../../etc", strings.Repeat("c", 64)); err == nil {
		t.Error("a path for a uid")
	}
}

// A pod's throttling is counted where the kernel did it: in the
// container's cgroup or in its pod's, which kubelet gives a quota too;
// the larger count is the least it was throttled.
func TestPodThrottlingCountsBothLevels(t *testing.T) {
	uid, cid := "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0", strings.Repeat("c", 64)
	root := t.TempDir()
	rel := "kubepods/burstable/pod" + uid + "/" + cid
	for _, c := range v1Controllers {
		os.MkdirAll(filepath.Join(root, c, rel), 0o755)
	}
	os.WriteFile(filepath.Join(root, "cpuacct", rel, "cpuacct.usage"), []byte("2000000000\n"), 0o644)
	os.WriteFile(filepath.Join(root, "cpu", rel, "cpu.stat"), []byte("nr_periods 100\nnr_throttled 40\nthrottled_time 3000000000\n"), 0o644)
	os.WriteFile(filepath.Join(root, "cpu", filepath.Dir(rel), "cpu.stat"), []byte("nr_periods 90\nnr_throttled 70\nthrottled_time 5000000000\n"), 0o644)
	cg, err := FindPodCgroup(root, uid, cid)
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	c, err := cg.Read()
	if err != nil {
		t.Fatal(err)
	}
	p, tp := c.Throttling()
	if c.ThrottledNs != 5e9 || p != 90 || tp != 70 {
		t.Errorf("throttled %d ns in %d of %d periods; want the pod's 5 s in 70 of its 90", c.ThrottledNs, tp, p)
	}
}

// A share of throttled periods is one level's: the container counted 40
// periods in an interval where its pod, whose periods started at other
// moments, was throttled in 60 of 70. Mixed, the share would read 150%.
func TestAThrottledShareIsOneLevels(t *testing.T) {
	prev := Counters{At: time.Unix(100, 0), Periods: 1000, ThrottledPeriods: 500, OuterPeriods: 1100, OuterThrottledPeriods: 600}
	cur := Counters{At: time.Unix(101, 0), Periods: 1040, ThrottledPeriods: 530, OuterPeriods: 1170, OuterThrottledPeriods: 660}
	s := MakeSample(0, 1, prev, cur, Progress{})
	if s.Periods != 70 || s.ThrottledPeriods != 60 || s.ThrottledPct > 100 {
		t.Errorf("%d of %d periods, %.0f%%; want the pod's 60 of 70", s.ThrottledPeriods, s.Periods, s.ThrottledPct)
	}
	cur.OuterThrottledPeriods = 610 // the container was throttled more
	if s := MakeSample(0, 1, prev, cur, Progress{}); s.Periods != 40 || s.ThrottledPeriods != 30 {
		t.Errorf("%d of %d periods; want the container's 30 of 40", s.ThrottledPeriods, s.Periods)
	}
}
