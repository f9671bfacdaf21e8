package runner

import (
	"sync"
	"time"
)

// ticker is the one clock that every run's sampler follows: one timer for
// all the lanes of all the runs, however many run at once, so that the
// server wakes once per interval and the runs' samples fall on the same
// instants. It runs only while some run is subscribed.
type ticker struct {
	every time.Duration

	mu   sync.Mutex
	subs map[chan time.Time]struct{}
	stop chan struct{} // closes the running timer's goroutine; nil when stopped
}

func newTicker(every time.Duration) *ticker {
	return &ticker{every: every, subs: map[chan time.Time]struct{}{}}
}

// subscribe returns a channel of ticks and the function that ends the
// subscription. A subscriber that has not taken the last tick misses the
// next: ticks never queue up behind a slow reading.
func (k *ticker) subscribe() (<-chan time.Time, func()) {
	c := make(chan time.Time, 1)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.subs[c] = struct{}{}
	if k.stop == nil {
		k.stop = make(chan struct{})
		go k.run(k.stop)
	}
	return c, func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		if _, ok := k.subs[c]; !ok {
			return
		}
		delete(k.subs, c)
		if len(k.subs) == 0 && k.stop != nil {
			close(k.stop)
			k.stop = nil
		}
	}
}

// run lives from the first subscription to the last one's end.
func (k *ticker) run(stop chan struct{}) {
	t := time.NewTicker(k.every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			k.mu.Lock()
			for c := range k.subs {
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
