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
	r := twelveSpinLanes(b, st)
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

// twelveSpinLanes runs twelve spin lanes at --cpus 0.02, as in make
// bench-overhead, with the run's clock at 5 s so that the ticks a
// benchmark takes are its own, and returns once all run and have written
// their progress files.
func twelveSpinLanes(b *testing.B, st *store.Store) *runner.Run {
	const lanes = 12
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
	r, err := m.SubmitFrom(sp, p, "", "")
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
	return r
}

// BenchmarkNoiseCost is what the host's noise figures add to a tick of
// twelve lanes, in the same loop as the tick without them: /proc/stat,
// this server's and the engine's processes' stat files, and each lane's
// threads' schedstat, read once a second (every fourth tick at 250 ms).
// cpu-µs/tick is the tick without the figures, noise-cpu-µs/tick what
// they add; find-cpu-µs is finding the engine's processes, which a run
// does once.
func BenchmarkNoiseCost(b *testing.B) {
	st, err := store.Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	r := twelveSpinLanes(b, st)
	plain, noisy := runner.Sampler(r, false), runner.Sampler(r, true)
	noisy(time.Now()) // the first reading, which gives no figure
	var off, on, scan time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := cpuTime(b)
		plain(time.Now())
		t1 := cpuTime(b)
		noisy(time.Now())
		t2 := cpuTime(b)
		runner.EnginePids(r)
		t3 := cpuTime(b)
		off, on, scan = off+t1-t0, on+t2-t1, scan+t3-t2
	}
	b.StopTimer()
	if err := st.Sync(); err != nil {
		b.Fatal(err)
	}
	n := float64(b.N)
	b.ReportMetric(float64(off.Microseconds())/n, "cpu-µs/tick")
	b.ReportMetric(float64((on-off).Microseconds())/n, "noise-cpu-µs/tick")
	b.ReportMetric(float64(scan.Microseconds())/n, "find-cpu-µs")
}
