package runner

import "time"

// jitter counts how far each sample's interval strayed from the run's
// sampling interval, in bins of jitterBin up to jitterMax: a fixed-size
// histogram, so that a long run at 50 ms costs nothing more to report.
type jitter struct {
	bins [jitterMax / jitterBin]int64
	n    int64
	max  time.Duration
}

const (
	jitterBin = 100 * time.Microsecond
	jitterMax = 100 * time.Millisecond
)

// add counts one interval that took gap where want was asked for.
func (j *jitter) add(gap, want time.Duration) {
	e := gap - want
	if e < 0 {
		e = -e
	}
	j.n++
	j.max = max(j.max, e)
	j.bins[min(int(e/jitterBin), len(j.bins)-1)]++
}

// quantile is the error at or under which a fraction q of the intervals
// fell, to the bin's upper edge.
func (j *jitter) quantile(q float64) time.Duration {
	if j.n == 0 {
		return 0
	}
	want := int64(q*float64(j.n) + 0.999999)
	var seen int64
	for i, c := range j.bins {
		seen += c
		if seen >= want {
			return min(time.Duration(i+1)*jitterBin, j.max)
		}
	}
	return j.max
}

// SamplingView is how the run's samples kept to their interval: the
// interval error's median and 99th percentile over every lane's samples
// read from the cgroup files.
type SamplingView struct {
	IntervalMs float64 `json:"interval_ms"`
	Intervals  int64   `json:"intervals"`
	ErrorP50Ms float64 `json:"error_p50_ms"`
	ErrorP99Ms float64 `json:"error_p99_ms"`
	ErrorMaxMs float64 `json:"error_max_ms"`
}

func (j *jitter) view(interval time.Duration) *SamplingView {
	if j.n == 0 {
		return nil
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return &SamplingView{IntervalMs: ms(interval), Intervals: j.n, ErrorP50Ms: ms(j.quantile(0.5)), ErrorP99Ms: ms(j.quantile(0.99)), ErrorMaxMs: ms(j.max)}
}
