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
	done chan struct{} // closed by the running timer's goroutine as it returns
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
// Whoever stops a timer (by subscribing at another period, or by the last
// subscription's end) waits for its goroutine to return.
func (k *ticker) subscribe(every time.Duration) (<-chan time.Time, func()) {
	c := make(chan time.Time, 1)
	k.mu.Lock()
	k.subs[c] = &subscription{every: every}
	stopped := k.retimeLocked()
	k.mu.Unlock()
	wait(stopped)
	return c, func() {
		k.mu.Lock()
		if _, ok := k.subs[c]; !ok {
			k.mu.Unlock()
			return
		}
		delete(k.subs, c)
		stopped := k.retimeLocked()
		k.mu.Unlock()
		wait(stopped)
	}
}

// wait waits for a stopped timer's goroutine, if one was stopped.
func wait(done chan struct{}) {
	if done != nil {
		<-done
	}
}

// retimeLocked starts, stops or changes the timer to the period the
// subscriptions need, and returns the done channel of the timer it
// stopped, if any, to wait on once k.mu is released (the timer's
// goroutine takes k.mu at each tick). k.mu is held.
func (k *ticker) retimeLocked() chan struct{} {
	var base time.Duration
	for _, s := range k.subs {
		base = gcd(base, s.every)
	}
	if base == k.base && (k.stop != nil) == (base > 0) {
		return nil
	}
	var stopped chan struct{}
	if k.stop != nil {
		close(k.stop)
		k.stop, stopped = nil, k.done
	}
	k.base = base
	if base > 0 {
		k.stop, k.done = make(chan struct{}), make(chan struct{})
		go k.run(k.stop, k.done, base)
	}
	return stopped
}

func gcd(a, b time.Duration) time.Duration {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// run lives from the first subscription to the last one's end, or until
// the period changes; it closes done as it returns.
func (k *ticker) run(stop, done chan struct{}, base time.Duration) {
	defer close(done)
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
					clockStats.ticks.Add(1)
				default: // still reading the last one
					clockStats.missed.Add(1)
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
