package runner

import (
	"sync"
	"time"
)

// ticker is the one clock that every run's sampler follows: one timer for
// all the lanes of all the runs, however many run at once, so that the
// server wakes once per tick and the runs' samples fall on the same
// instants. Each run follows it at its own interval; the timer ticks at
// the greatest common divisor of the intervals subscribed (every interval
// is a multiple of IntervalStep), and runs only while some run is
// subscribed.
type ticker struct {
	mu   sync.Mutex
	subs map[chan time.Time]*subscription
	base time.Duration // the running timer's period
	stop chan struct{} // closes the running timer's goroutine; nil when stopped
}

type subscription struct {
	every time.Duration
	next  time.Time // zero: at the next tick
}

func newTicker() *ticker {
	return &ticker{subs: map[chan time.Time]*subscription{}}
}

// subscribe returns a channel of ticks every interval and the function
// that ends the subscription. A subscriber that has not taken the last
// tick misses the next: ticks never queue up behind a slow reading.
func (k *ticker) subscribe(every time.Duration) (<-chan time.Time, func()) {
	c := make(chan time.Time, 1)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.subs[c] = &subscription{every: every}
	k.retimeLocked()
	return c, func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		if _, ok := k.subs[c]; !ok {
			return
		}
		delete(k.subs, c)
		k.retimeLocked()
	}
}

// retimeLocked starts, stops or changes the timer to the period the
// subscriptions need. k.mu is held.
func (k *ticker) retimeLocked() {
	var base time.Duration
	for _, s := range k.subs {
		base = gcd(base, s.every)
	}
	if base == k.base && (k.stop != nil) == (base > 0) {
		return
	}
	if k.stop != nil {
		close(k.stop)
		k.stop = nil
	}
	k.base = base
	if base > 0 {
		k.stop = make(chan struct{})
		go k.run(k.stop, base)
	}
}

func gcd(a, b time.Duration) time.Duration {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// run lives from the first subscription to the last one's end, or until
// the period changes.
func (k *ticker) run(stop chan struct{}, base time.Duration) {
	t := time.NewTicker(base)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			k.mu.Lock()
			for c, s := range k.subs {
				if now.Add(base / 2).Before(s.next) {
					continue // not this subscriber's tick
				}
				// Its next tick keeps to its grid; after a gap (a period
				// change, a stall) the grid starts again from now.
				s.next = s.next.Add(s.every)
				if s.next.Before(now.Add(base / 2)) {
					s.next = now.Add(s.every)
				}
				select {
				case c <- now:
				default: // still reading the last one
				}
			}
			k.mu.Unlock()
		}
	}
}

// subscribers says how many runs follow the clock.
func (k *ticker) subscribers() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.subs)
}
