package runner_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/store"
	"github.com/limitlab/limitlab/internal/workshop"
)

// cpuTime is the process's CPU time so far, user and system, every thread.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkContainerSample is the server's CPU per container-sample over
// real containers, on the sampler's own path: twelve spin lanes at
// --cpus 0.02, as in make bench-overhead, each tick reading every lane's
// cgroup files and progress file, parsing them, making the samples and
// publishing the batch to the run's hub and to the SQLite store, whose
// writes are counted to their commit. The run's own clock is set to 5 s so
// that the ticks measured are these. cpu-µs/sample is the process's CPU
// time (getrusage, every goroutine) per lane read; the ticks come back to
// back, so the caches are warm and the wake-ups between ticks that a 4 Hz
// clock costs are not in it (make bench-overhead has those).
func BenchmarkContainerSample(b *testing.B) {
	const lanes = 12
	st, err := store.Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	m := enginetest.Manager(b, func(o *workshop.Options) { o.Store = st })
	var spec strings.Builder
	spec.WriteString(`{"name": "sample cost", "mode": "parallel", "duration": "300s", "interval": "5s", "lanes": [`)
	for i := range lanes {
		if i > 0 {
			spec.WriteString(",")
		}
		fmt.Fprintf(&spec, `{"name": "spin %d", "workload": {"kind": "spin", "seconds": 290}, "limits": {"cpus": "0.02"}}`, i+1)
	}
	spec.WriteString("]}")
	sp, p := enginetest.Plan(b, m, spec.String())
	r, err := m.Submit(sp, p, "")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(r.Stop)
	enginetest.WaitFor(b, time.Minute, "every lane running", func() bool {
		n := 0
		for _, l := range r.View().Lanes {
			if l.State == runner.LaneRunning {
				n++
			}
		}
		return n == lanes
	})
	// The workloads' progress files are written by now.
	time.Sleep(time.Second)
	b.ReportAllocs()
	before := cpuTime(b)
	b.ResetTimer()
	for range b.N {
		runner.SampleOnce(r, time.Now())
	}
	if err := st.Sync(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	used := cpuTime(b) - before
	b.ReportMetric(float64(used.Microseconds())/float64(b.N*lanes), "cpu-µs/sample")
}
