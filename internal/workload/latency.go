package workload

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/limitlab/limitlab/internal/workload/wire"
)

// The latencies a histogram keeps: from a microsecond to two minutes, to
// three significant figures (as wrk2 and vegeta's hdrplot do). A longer
// one is counted at the top.
const (
	minLatencyUS = 1
	maxLatencyUS = int64(2 * time.Minute / time.Microsecond)
	latencyFigs  = 3
)

// LateAfter is how far behind its schedule an open loop's request may be
// sent before it counts as late: the generator could not keep its rate.
const LateAfter = time.Millisecond

// loadStats is the load generator's record of its requests: their
// latencies in HDR histograms (the whole run's and the reporting
// interval's), the failed ones, and in an open loop the ones sent late.
type loadStats struct {
	loop string // wire.OpenLoop or wire.ClosedLoop

	mu       sync.Mutex
	all      *hdrhistogram.Histogram
	interval *hdrhistogram.Histogram

	failures atomic.Int64
	late     atomic.Int64
}

func newLoadStats(open bool) *loadStats {
	s := &loadStats{loop: wire.ClosedLoop,
		all:      hdrhistogram.New(minLatencyUS, maxLatencyUS, latencyFigs),
		interval: hdrhistogram.New(minLatencyUS, maxLatencyUS, latencyFigs)}
	if open {
		s.loop = wire.OpenLoop
	}
	return s
}

// record counts one request that took d (in an open loop, from when it
// was due).
func (s *loadStats) record(d time.Duration, ok bool) {
	if !ok {
		s.failures.Add(1)
	}
	us := min(max(d.Microseconds(), minLatencyUS), maxLatencyUS)
	s.mu.Lock()
	_ = s.all.RecordValue(us)
	_ = s.interval.RecordValue(us)
	s.mu.Unlock()
}

// sent notes how far behind its due instant a request went out.
func (s *loadStats) sent(behind time.Duration) {
	if behind > LateAfter {
		s.late.Add(1)
	}
}

// count is how many requests completed.
func (s *loadStats) count() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.all.TotalCount()
}

// take summarizes the interval's requests and starts a new interval.
func (s *loadStats) take() *wire.Latency {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.summary(s.interval)
	s.interval.Reset()
	return l
}

// total summarizes every request.
func (s *loadStats) total() *wire.Latency {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.summary(s.all)
}

func (s *loadStats) summary(h *hdrhistogram.Histogram) *wire.Latency {
	if h.TotalCount() == 0 {
		return nil
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return &wire.Latency{
		P50: ms(h.ValueAtQuantile(50)), P90: ms(h.ValueAtQuantile(90)), P99: ms(h.ValueAtQuantile(99)),
		P999: ms(h.ValueAtQuantile(99.9)), Max: ms(h.Max()),
		Count: h.TotalCount(), Late: s.late.Load(), Loop: s.loop,
	}
}
