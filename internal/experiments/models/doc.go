// Package models predicts what the kernel does with a plan's limits and
// judges the measurements against it: the CPU allotment model, block IO,
// CFS throttling and bursts, the runtimes' rules, a series' statistics and
// every verdict. It reads plans (package specs) and the kernel's formulas
// (package kernelfiles); it does no I/O.
package models
