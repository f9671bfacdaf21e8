package runner

import "time"

// SampleOnce takes one tick's sample of r's running lanes, as its sampler
// does at each tick of the clock, for the benchmark of a sample's cost.
func SampleOnce(r *Run, now time.Time) { (&execution{r: r}).sampleOnce(now) }
