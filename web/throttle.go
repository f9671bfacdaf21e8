package web

import (
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// The throttles' settings. Each is a token bucket per client address (an
// IPv6 /64 counts as one): Burst at once, then one every Every. A throttle
// slows; it never locks anyone out for longer than one token takes.
const (
	// Wrong join codes: a room of fifty behind one NAT with a few typos
	// among them never meets the throttle, while guessing a ten-character
	// code of the join alphabet from one address takes, on average,
	// 31^10 / 2 * JoinWrongEvery: about 39 million years
	// (docs/workshops.md).
	JoinWrongBurst = 20
	JoinWrongEvery = 3 * time.Second
	// New identities joining with the code: a room arrives at once, then
	// one a JoinEvery. The presenter sees each address's identities and
	// can close the room.
	JoinBurst = 60
	JoinEvery = 10 * time.Second
	// Wrong presenter tokens: slowed, while the right token always works.
	PresenterWrongBurst = 10
	PresenterWrongEvery = 6 * time.Second
	// New participants (cookies the server issues) that may act, per
	// address, for clients without the code: a browser keeps its cookie;
	// a script that drops it to jump the fair queue does not get far.
	NewParticipantsBurst = 30
	NewParticipantsEvery = 2 * time.Second
	// Imports per participant.
	ImportsBurst = 5
	ImportsEvery = 12 * time.Second
)

// throttleKeys bounds the keys a throttle remembers: past it, those whose
// bucket is full, which a new bucket would be too, are forgotten first.
const throttleKeys = 100_000

// throttle is a token bucket per key (golang.org/x/time/rate).
type throttle struct {
	every time.Duration
	burst int

	mu   sync.Mutex
	keys map[string]*rate.Limiter
}

func newThrottle(every time.Duration, burst int) *throttle {
	return &throttle{every: every, burst: burst, keys: map[string]*rate.Limiter{}}
}

func (t *throttle) limiter(key string, now time.Time) *rate.Limiter {
	l, ok := t.keys[key]
	if !ok {
		if len(t.keys) >= throttleKeys {
			t.sweepLocked(now)
		}
		l = rate.NewLimiter(rate.Every(t.every), t.burst)
		t.keys[key] = l
	}
	return l
}

// allow takes a token for key if it has one.
func (t *throttle) allow(key string, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.limiter(key, now).AllowN(now, 1)
}

// take takes a token for key, and says how long it must wait for one if
// it has none (then taking nothing).
func (t *throttle) take(key string, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.limiter(key, now).ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d
	}
	return 0
}

// wait says how long key must wait for a token, taking none.
func (t *throttle) wait(key string, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	l, ok := t.keys[key]
	if !ok {
		return 0
	}
	if tokens := l.TokensAt(now); tokens < 1 {
		return time.Duration((1 - tokens) * float64(t.every))
	}
	return 0
}

// sweepLocked forgets the keys whose bucket is full, then, if that is not
// room enough, any until half the bound is left.
func (t *throttle) sweepLocked(now time.Time) {
	for k, l := range t.keys {
		if l.TokensAt(now) >= float64(t.burst) {
			delete(t.keys, k)
		}
	}
	for k := range t.keys {
		if len(t.keys) < throttleKeys/2 {
			return
		}
		delete(t.keys, k)
	}
}

// guardKey is the address a client's attempts count against: an IPv4
// address, or an IPv6 address's /64, which one host usually holds whole.
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
