package web

import (
	"net/netip"
	"sync"
	"time"
)

// The attempt guard's settings: after GuardFailures wrong secrets from one
// address (an IPv6 /64 counts as one), that address is refused, the right
// secret included, for GuardLockout; each further lockout lasts twice the
// one before, up to GuardMaxLockout. An address that fails nothing for
// GuardForget is forgotten.
const (
	GuardFailures   = 5
	GuardLockout    = 30 * time.Second
	GuardMaxLockout = time.Hour
	GuardForget     = 2 * time.Hour
	// guardKeys bounds the addresses a guard remembers: past it, those
	// not locked out are forgotten first.
	guardKeys = 100_000
)

// attemptGuard counts failed attempts at a secret (the join code, the
// presenter token) per client address and locks out an address that
// fails too often. Its decision and its count are made at once, under its
// lock, so that attempts sent together cannot all pass the check before
// any of them is counted.
type attemptGuard struct {
	mu    sync.Mutex
	addrs map[string]*attempts
}

type attempts struct {
	failures int       // since the last lockout or success
	strikes  int       // lockouts so far
	until    time.Time // refused until then
	last     time.Time // the last failure
}

// guardKey is the address attempts count against: an IPv4 address, or an
// IPv6 address's /64, which one host usually holds whole.
func guardKey(address string) string {
	a, err := netip.ParseAddr(address)
	if err != nil {
		return address
	}
	a = a.Unmap()
	if a.Is4() {
		return a.String()
	}
	p, err := a.Prefix(64)
	if err != nil {
		return address
	}
	return p.String()
}

// check tells whether the address may try now, and if not, for how long
// it is refused.
func (g *attemptGuard) check(address string, now time.Time) (time.Duration, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	a, ok := g.addrs[guardKey(address)]
	if ok && now.Before(a.until) {
		return a.until.Sub(now), false
	}
	return 0, true
}

// attempt checks and counts in one step, under one lock: it is how a
// caller that knows the outcome before it answers (the join code, compared
// in constant time) keeps attempts sent together from all passing the
// check before any of them is counted.
func (g *attemptGuard) attempt(address string, ok bool, now time.Time) (time.Duration, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	key := guardKey(address)
	if a, known := g.addrs[key]; known && now.Before(a.until) {
		return a.until.Sub(now), false
	}
	g.recordLocked(key, ok, now)
	return 0, true
}

// recordLocked counts one attempt's outcome. A failure that reaches
// GuardFailures locks the address out; a success clears its failures but
// not its strikes, so that a lockout after it grows still.
func (g *attemptGuard) recordLocked(key string, ok bool, now time.Time) {
	a := g.addrs[key]
	if ok {
		if a != nil {
			a.failures = 0
		}
		return
	}
	if a == nil {
		if g.addrs == nil {
			g.addrs = map[string]*attempts{}
		}
		if len(g.addrs) >= guardKeys {
			g.sweepLocked(now)
		}
		a = &attempts{}
		g.addrs[key] = a
	}
	if now.Sub(a.last) > GuardForget {
		a.failures, a.strikes = 0, 0
	}
	a.last = now
	a.failures++
	if a.failures >= GuardFailures {
		a.failures = 0
		a.until = now.Add(lockout(a.strikes))
		a.strikes++
	}
}

func lockout(strikes int) time.Duration {
	d := GuardLockout
	for range strikes {
		d *= 2
		if d >= GuardMaxLockout {
			return GuardMaxLockout
		}
	}
	return d
}

// sweepLocked forgets the addresses that are not locked out, oldest
// failure first, until the guard has room again.
func (g *attemptGuard) sweepLocked(now time.Time) {
	for k, a := range g.addrs {
		if now.After(a.until) && now.Sub(a.last) > GuardLockout {
			delete(g.addrs, k)
		}
	}
	if len(g.addrs) < guardKeys {
		return
	}
	for k, a := range g.addrs {
		if now.After(a.until) {
			delete(g.addrs, k)
		}
		if len(g.addrs) < guardKeys/2 {
			return
		}
	}
}
