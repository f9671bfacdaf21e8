package runner

import (
	"time"
)

// SampleOnce takes one tick's sample of r's running lanes, as its sampler
// does at each tick of the clock, for the benchmark of a sample's cost.
func SampleOnce(r *Run, now time.Time) { (&execution{r: r}).sampleOnce(now) }

// Sampler is a run's sampling at each tick, with the host's noise figures
// or without them, for the benchmark of their cost. The figures are read
// as at the default interval's ticks (once in four), whatever r's own.
func Sampler(r *Run, noise bool) func(time.Time) {
	x := &execution{r: r}
	if noise {
		x.load = newHostLoad(r.env.Host.EnginePids(), DefaultInterval)
	}
	return x.sampleOnce
}

// EnginePids finds the engine's processes, as each run does once.
func EnginePids(r *Run) int { return len(r.env.Host.EnginePids()) }
