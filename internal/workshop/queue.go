package workshop

import (
	"slices"
	"time"
)

// fairQueue holds waiting items per participant and serves participants in
// turn: whoever was served least recently goes first, so one participant
// submitting many runs cannot push the others back (round-robin, not first
// come first served). Within a participant, items keep their order. A
// participant is also known by its client address: one never served
// counts as served when its address last was, so that a script which
// becomes a new participant on every request (it drops its cookie) does
// not go before everybody each time. It is not safe for concurrent use.
type fairQueue[T comparable] struct {
	turn  []string // participants with waiting items, next to be served first
	items map[string][]T
	// served is when each participant was last served, on a counter, and
	// at what time, to forget the idle.
	served map[string]stamp
	// addrOf is each waiting participant's address, servedAddr when each
	// address was last served.
	addrOf     map[string]string
	servedAddr map[string]stamp
	clock      uint64
	now        func() time.Time
}

type stamp struct {
	clock uint64
	at    time.Time
}

// idleAfter is how long a participant with nothing waiting is remembered
// after its last turn. One forgotten counts as never served, which only
// matters while others wait: its turn comes before theirs, as a
// newcomer's does.
const idleAfter = time.Hour

func newFairQueue[T comparable]() *fairQueue[T] {
	return &fairQueue[T]{items: map[string][]T{}, served: map[string]stamp{}, addrOf: map[string]string{},
		servedAddr: map[string]stamp{}, now: time.Now}
}

// forgetIdle drops the turns of participants idle for idleAfter, so that
// the queue's memory follows the participants present, not all there
// ever were.
func (q *fairQueue[T]) forgetIdle() {
	cutoff := q.now().Add(-idleAfter)
	for p, s := range q.served {
		if s.at.Before(cutoff) && len(q.items[p]) == 0 {
			delete(q.served, p)
		}
	}
	for a, s := range q.servedAddr {
		if s.at.Before(cutoff) {
			delete(q.servedAddr, a)
		}
	}
}

// last is when a participant was last served, or its address was.
func (q *fairQueue[T]) last(p string) uint64 {
	c := q.served[p].clock
	if a := q.addrOf[p]; a != "" {
		c = max(c, q.servedAddr[a].clock)
	}
	return c
}

// remembered is how many participants the queue keeps a turn for.
func (q *fairQueue[T]) remembered() int { return len(q.served) }

// Push adds an item at the end of its participant's line; address is the
// client's ("" if not known). A participant with nothing waiting joins the
// turn after those served before it, and before those served since: one
// just served waits behind the others.
func (q *fairQueue[T]) Push(participant, address string, item T) {
	q.forgetIdle()
	if len(q.items[participant]) == 0 {
		q.addrOf[participant] = address
		at := len(q.turn)
		for i, p := range q.turn {
			if q.last(p) > q.last(participant) {
				at = i
				break
			}
		}
		q.turn = slices.Insert(q.turn, at, participant)
	}
	q.items[participant] = append(q.items[participant], item)
}

// Len is the number of waiting items.
func (q *fairQueue[T]) Len() int {
	n := 0
	for _, items := range q.items {
		n += len(items)
	}
	return n
}

// Remove takes an item out of the queue wherever it is.
func (q *fairQueue[T]) Remove(item T) bool {
	for p, items := range q.items {
		if i := slices.Index(items, item); i >= 0 {
			q.items[p] = slices.Delete(items, i, i+1)
			if len(q.items[p]) == 0 {
				q.drop(p)
			}
			return true
		}
	}
	return false
}

// Take takes every item of one participant out of the queue.
func (q *fairQueue[T]) Take(p string) []T {
	items := q.items[p]
	q.drop(p)
	return items
}

func (q *fairQueue[T]) drop(p string) {
	delete(q.items, p)
	delete(q.addrOf, p)
	if i := slices.Index(q.turn, p); i >= 0 {
		q.turn = slices.Delete(q.turn, i, i+1)
	}
}

// Next takes the first item of the first participant in turn whose first
// item fits (nil fits means any), and moves that participant to the end of
// the turn. A participant whose first item does not fit keeps its place.
func (q *fairQueue[T]) Next(fits func(T) bool) (T, bool) {
	for _, p := range q.turn {
		head := q.items[p][0]
		if fits != nil && !fits(head) {
			continue
		}
		rest := q.items[p][1:]
		addr := q.addrOf[p]
		q.drop(p)
		q.clock++
		q.served[p] = stamp{q.clock, q.now()}
		if addr != "" {
			q.servedAddr[addr] = q.served[p]
		}
		if len(rest) > 0 {
			q.items[p] = rest
			q.addrOf[p] = addr
			q.turn = append(q.turn, p)
		}
		return head, true
	}
	var zero T
	return zero, false
}

// Order is the items in the order they will be served if nothing else
// changes: one from each participant in turn, round after round.
func (q *fairQueue[T]) Order() []T {
	var out []T
	for round := 0; ; round++ {
		added := false
		for _, p := range q.turn {
			if items := q.items[p]; round < len(items) {
				out = append(out, items[round])
				added = true
			}
		}
		if !added {
			return out
		}
	}
}
