package runner

import (
	"sync/atomic"
	"time"
)

// clockStats count what the one sampling clock did, for the metrics:
// ticks given to runs, ticks a run missed because it was still reading
// the one before, and how long a run's samples took from its tick to
// being published.
var clockStats struct {
	ticks, missed atomic.Uint64
	lagNs, lagged atomic.Uint64
}

// ClockStats is what the sampling clock did since the server started:
// ticks given to runs, ticks missed by a run still busy with the one
// before, and the samples' lag from their tick to their publication, in
// all and how many were timed.
type ClockStats struct {
	Ticks, Missed uint64
	Lag           time.Duration
	Lagged        uint64
}

// Clock is the sampling clock's figures now.
func Clock() ClockStats {
	return ClockStats{Ticks: clockStats.ticks.Load(), Missed: clockStats.missed.Load(),
		Lag: time.Duration(clockStats.lagNs.Load()), Lagged: clockStats.lagged.Load()}
}

// sampled counts one tick's samples, published lag after the tick.
func sampled(lag time.Duration) {
	clockStats.lagNs.Add(uint64(max(lag, 0)))
	clockStats.lagged.Add(1)
}
