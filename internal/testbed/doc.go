// Package testbed starts what the suite and the project's tools run beside
// the machine's own engine, and stops it: a Docker engine of its own in a
// network namespace of its own (a pool's second engine), nginx as a
// workshop's TLS proxy, a self-signed certificate; and it reaps the
// engines an interrupted run left. Unlike enginetest it needs no
// testing.T, so cmd/soak and cmd/pooldemo use it without linking the
// test helpers.
package testbed
