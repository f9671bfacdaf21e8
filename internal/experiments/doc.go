// Package experiments is the top of Limit Lab's domain: the catalogue of
// labs with their guided steps and links, and Parse, Validate and
// ParseFind, which resolve the lab a spec or a search names. Below it
// stand package finder (the limit finder), package models (predictions
// and verdicts), package kernelfiles (what limits write in the kernel)
// and package specs (specs, plans and their validation). Nothing in the
// domain does I/O.
package experiments
