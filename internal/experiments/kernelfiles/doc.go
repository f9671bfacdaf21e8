// Package kernelfiles names what a lane's applied limits write in the
// kernel: each cgroup file with the value it should hold, on cgroup v1 and
// v2, for a container and for a pod, and the formulas by which shares
// become weights. It reads plans (package specs) and does no I/O.
package kernelfiles
