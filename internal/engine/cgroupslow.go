package engine

import "time"

// Some cgroup files change rarely or only together with another, cheaper
// one, and the kernel generates each anew on every read (memory.stat is
// the dearest file a reading takes). The reader re-reads them only when
// what they follow has moved, and at least once every slowEvery:
//   - memory.stat, for the inactive file cache subtracted from usage: when
//     the usage file changed since it was last read. A gauge: a reading
//     that skips it is at most slowEvery behind, with no rate to distort.
//   - the memory limit: once every slowEvery, and at the next reading after
//     Refresh (a live change).
//   - v1's blkio.throttle.io_service_bytes: when io_serviced, read every
//     time, has moved. The kernel charges a bio's bytes and its count
//     together (blk-throttle's throtl_charge_bio), so bytes cannot move
//     while the count stays.
//   - v1's cpuacct.stat, the split of CPU time into user and system: once
//     every slowEvery. Nothing charts it; a lane's totals split its exact
//     CPU time (cpuacct.usage, read every time) by its last ratio
//     (Counters.CPUSplit).
//   - the gauges, memory usage and pids: at every reading while they move,
//     and once every slowEvery while they rest. A gauge that starts to move
//     shows it at most slowEvery late, and from then on at every reading;
//     with no rate made of it, nothing else is distorted. Most lanes' pids
//     and many lanes' memory rest for most of a run.
//
// A sampler at 50 ms keeps what the charts make rates of exact: CPU,
// throttling and IO counts are read every time.
const slowEvery = time.Second

// gauge is a figure read at every reading while it moves, and once every
// slowEvery while it rests.
type gauge struct {
	v     uint64
	at    time.Time // when it was last read; zero: never
	moved bool      // it moved at its last reading
}

// read returns the gauge, reading it (with read) when it is due at now.
func (g *gauge) read(now time.Time, read func() (uint64, error)) uint64 {
	if g.moved || due(g.at, now) {
		if v, err := read(); err == nil {
			g.moved = v != g.v || g.at.IsZero()
			g.v, g.at = v, now
		}
	}
	return g.v
}

// slowFiles holds what was last read of those files, and when: a zero
// time is never.
type slowFiles struct {
	memAt                   time.Time // when memory.stat was last read
	memUsage                uint64    // the usage it was read with
	inactive, totalInactive uint64
	hasTotal                bool

	limitAt time.Time
	limit   uint64

	ioAt          time.Time
	ioOps         uint64 // reads + writes when the bytes were last read
	readB, writeB uint64

	splitAt       time.Time
	userNs, sysNs uint64

	usage, pids gauge
}

// Refresh makes the next reading take every file, as after a live change
// of the container's limits.
func (r *CgroupReader) Refresh() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.slow = slowFiles{}
}

// Refresh makes rd's next reading take every file, where it spaces some
// out (a CgroupReader, here or in a sampler).
func Refresh(rd Reader) {
	if cr, ok := rd.(interface{ Refresh() }); ok {
		cr.Refresh()
	}
}

// due says whether a file last read at at (zero: never) is to be read at
// now.
func due(at, now time.Time) bool {
	return at.IsZero() || now.Sub(at) >= slowEvery
}

// memStat returns the inactive file cache, re-reading the stat file (read
// by read) when the usage has moved or it is due.
func (s *slowFiles) memStat(now time.Time, usage uint64, read func() (inactive, total uint64, hasTotal bool, ok bool)) (inactive, total uint64, hasTotal bool) {
	if usage != s.memUsage || due(s.memAt, now) {
		if in, tot, has, ok := read(); ok {
			s.inactive, s.totalInactive, s.hasTotal = in, tot, has
			s.memAt, s.memUsage = now, usage
		}
	}
	return s.inactive, s.totalInactive, s.hasTotal
}

// memLimit returns the memory limit, re-read when due.
func (s *slowFiles) memLimit(now time.Time, read func() (uint64, error)) uint64 {
	if due(s.limitAt, now) {
		if v, err := read(); err == nil {
			s.limit, s.limitAt = v, now
		}
	}
	return s.limit
}

// ioBytes returns the bytes read and written, re-read when the operation
// count ops has moved or they are due.
func (s *slowFiles) ioBytes(now time.Time, ops uint64, read func() (r, w uint64, ok bool)) (uint64, uint64) {
	if ops != s.ioOps || due(s.ioAt, now) {
		if rb, wb, ok := read(); ok {
			s.readB, s.writeB = rb, wb
			s.ioAt, s.ioOps = now, ops
		}
	}
	return s.readB, s.writeB
}

// cpuSplit returns the CPU time in user and system mode, re-read when due
// or while it has no ratio yet (the kernel counts it in clock ticks, and a
// container read as it starts may have none).
func (s *slowFiles) cpuSplit(now time.Time, read func() (user, sys uint64, ok bool)) (uint64, uint64) {
	if due(s.splitAt, now) || s.userNs+s.sysNs == 0 {
		if u, sy, ok := read(); ok {
			s.userNs, s.sysNs, s.splitAt = u, sy, now
		}
	}
	return s.userNs, s.sysNs
}
