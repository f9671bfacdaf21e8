// Package experiments is the top of Limit Lab's domain: the catalogue of
// labs with their guided steps and links, the limit finder, and Parse and
// Validate, which resolve the lab a spec names before the plan is made.
// Below it stand package specs (specs, plans and their validation),
// package kernelfiles (what limits write in the kernel) and package
// models (predictions and verdicts). Nothing in the domain does I/O.
package experiments
