// Package finder is the limit finder's domain: a search for the smallest
// limit at which a service meets its target under a load (FindSpec), the
// bisection over its range with repeats near the target, the probes'
// runs and the answer's judgement and recommendation. It reads specs and
// a series' statistics (package models); the catalogue's search labs are
// resolved above it (experiments.ParseFind). It does no I/O.
package finder
