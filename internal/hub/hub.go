// Package hub fans a run's messages out to its live viewers. Publishing
// never blocks: each subscriber has a small buffer, and one that falls behind
// is dropped rather than allowed to slow the run or the other viewers (the
// pattern of coder/websocket's chat example). The hub keeps every message so
// that a late viewer gets the run's history before the live stream.
package hub

import (
	"sync"
)

// DefaultBuffer is how many messages a subscriber may fall behind before it
// is dropped. At four sample batches a second it is several seconds of
// slack: enough for a slow network, not for a stalled tab.
const DefaultBuffer = 32

// Hub is one run's fan-out. The zero value is not usable; use New.
type Hub struct {
	buffer int

	mu      sync.Mutex
	history [][]byte
	subs    map[*Subscriber]struct{}
	closed  bool
}

// Subscriber receives a hub's messages on C, in order. C is closed when the
// hub closes (the run ended: a normal end) or when the subscriber is dropped
// for falling behind, in which case Dropped reports true.
type Subscriber struct {
	C       <-chan []byte
	c       chan []byte
	dropped bool
	hub     *Hub
}

// New returns an open hub whose subscribers each buffer up to buffer
// messages (DefaultBuffer if buffer <= 0).
func New(buffer int) *Hub {
	if buffer <= 0 {
		buffer = DefaultBuffer
	}
	return &Hub{buffer: buffer, subs: map[*Subscriber]struct{}{}}
}

// Publish records msg and offers it to every subscriber without waiting.
// The hub keeps msg; the caller must not change it afterwards.
func (h *Hub) Publish(msg []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.history = append(h.history, msg)
	for s := range h.subs {
		select {
		case s.c <- msg:
		default:
			s.dropped = true
			h.removeLocked(s)
		}
	}
}

// Subscribe returns the history so far and a subscriber that will receive
// every later message. Together they hold each message exactly once. On a
// closed hub the subscriber's channel is already closed.
func (h *Hub) Subscribe() (history [][]byte, s *Subscriber) {
	c := make(chan []byte, h.buffer)
	s = &Subscriber{C: c, c: c, hub: h}
	h.mu.Lock()
	defer h.mu.Unlock()
	history = h.history[:len(h.history):len(h.history)]
	if h.closed {
		close(c)
		return history, s
	}
	h.subs[s] = struct{}{}
	return history, s
}

// History is every message published so far, in order.
func (h *Hub) History() [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.history[:len(h.history):len(h.history)]
}

// Unsubscribe removes s; it is safe to call more than once.
func (s *Subscriber) Unsubscribe() {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	if _, ok := s.hub.subs[s]; ok {
		s.hub.removeLocked(s)
	}
}

// Dropped reports whether the hub dropped s for falling behind. It is
// meaningful once C is closed.
func (s *Subscriber) Dropped() bool {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.dropped
}

func (h *Hub) removeLocked(s *Subscriber) {
	delete(h.subs, s)
	close(s.c)
}

// Close ends the stream: subscribers get what is buffered, then a closed
// channel. Later Publish calls are ignored.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	for s := range h.subs {
		h.removeLocked(s)
	}
}

// Subscribers is the number of live subscribers.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}
