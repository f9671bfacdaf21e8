package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/enginetest"
)

// BenchmarkSamplerCost measures what reading a run through a sampler
// costs against reading its cgroup files in the server: two servers on the
// one engine at once, each running 12 lanes (spin at --cpus 0.02) sampled at
// 4 Hz, one reading the files itself, the other through a sampler process
// beside it; their CPU and the sampler's over the same 20 s windows, three
// of them. It reports each per container-sample. One iteration is the
// whole measurement: run it with -benchtime 1x.
func BenchmarkSamplerCost(b *testing.B) {
	const (
		lanes   = 12
		window  = 20 * time.Second
		windows = 3
		hz      = 4
	)
	enginetest.Engine(b)
	bin, err := enginetest.BuildBinary(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	addr, tokenFile, smp := startSampler(b, bin)
	for range b.N {
		files, filesExited, filesBase := startServer(b, bin, b.TempDir())
		through, throughExited, throughBase := startServer(b, bin, b.TempDir(), "-sampler", "http://"+addr, "-sampler-token-file", tokenFile)
		var ls []string
		for i := range lanes {
			ls = append(ls, fmt.Sprintf(`{"name": "lane %d", "workload": {"kind": "spin", "seconds": 120}, "limits": {"cpus": "0.02"}}`, i))
		}
		spec := `{"name": "sampler cost", "duration": "3m", "lanes": [` + strings.Join(ls, ",") + `]}`
		ids := []string{submit(b, filesBase, spec), submit(b, throughBase, spec)}
		for k, base := range []string{filesBase, throughBase} {
			enginetest.WaitFor(b, 2*time.Minute, "every lane to run", func() bool {
				var v struct {
					Lanes []struct {
						State       string
						StatsSource string `json:"stats_source"`
					}
				}
				getJSON(b, base+"/api/runs/"+ids[k], &v)
				for _, l := range v.Lanes {
					if l.State != "running" {
						return false
					}
				}
				if want := []string{"cgroup", "sampler"}[k]; len(v.Lanes) == lanes && v.Lanes[0].StatsSource != want {
					b.Fatalf("server %d reads its lanes from %q, want %q", k, v.Lanes[0].StatsSource, want)
				}
				return len(v.Lanes) == lanes
			})
		}
		time.Sleep(2 * time.Second)
		per := func(d time.Duration) float64 {
			return float64(d.Microseconds()) / (lanes * hz * window.Seconds())
		}
		var f, t, s []float64
		for w := range windows {
			f0, t0, s0 := procCPU(b, files.Process.Pid), procCPU(b, through.Process.Pid), procCPU(b, smp.Pid)
			time.Sleep(window)
			f = append(f, per(procCPU(b, files.Process.Pid)-f0))
			t = append(t, per(procCPU(b, through.Process.Pid)-t0))
			s = append(s, per(procCPU(b, smp.Pid)-s0))
			b.Logf("window %d: per container-sample, server reading the files %.0f µs; through the sampler: server %.0f µs, sampler %.0f µs", w+1, f[w], t[w], s[w])
		}
		for _, xs := range [][]float64{f, t, s} {
			slices.Sort(xs)
		}
		b.ReportMetric(f[windows/2], "files-server-µs/sample")
		b.ReportMetric(t[windows/2], "sampled-server-µs/sample")
		b.ReportMetric(s[windows/2], "sampler-µs/sample")
		_ = terminate(b, through, throughExited)
		_ = terminate(b, files, filesExited)
	}
}
