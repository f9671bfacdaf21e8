package hub

import (
	"strconv"
	"sync"
	"testing"
	"time"
)

func msg(i int) []byte { return []byte(strconv.Itoa(i)) }

func drain(t *testing.T, s *Subscriber) []string {
	t.Helper()
	var got []string
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-s.C:
			if !ok {
				return got
			}
			got = append(got, string(m))
		case <-timeout:
			t.Fatal("subscriber channel never closed")
		}
	}
}

func TestLateSubscriberGetsHistoryThenLive(t *testing.T) {
	h := New(8)
	for i := range 5 {
		h.Publish(msg(i))
	}
	history, sub := h.Subscribe()
	for i := 5; i < 8; i++ {
		h.Publish(msg(i))
	}
	h.Close()
	var got []string
	for _, m := range history {
		got = append(got, string(m))
	}
	got = append(got, drain(t, sub)...)
	for i := range 8 {
		if i >= len(got) || got[i] != strconv.Itoa(i) {
			t.Fatalf("got %v, want 0..7 each once in order", got)
		}
	}
	if len(got) != 8 || sub.Dropped() {
		t.Errorf("got %v (dropped %v)", got, sub.Dropped())
	}
}

func TestStalledSubscriberIsDroppedWithoutDelayingOthers(t *testing.T) {
	h := New(4)
	_, stalled := h.Subscribe() // never reads
	_, live := h.Subscribe()
	var got []string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		got = drain(t, live)
	}()
	const n = 1000
	for i := range n {
		h.Publish(msg(i)) // must never block on the stalled subscriber
	}
	h.Close()
	wg.Wait()
	if !stalled.Dropped() {
		t.Error("stalled subscriber was not dropped")
	}
	// The live reader may itself fall behind a tight publishing loop;
	// what matters is that if it was not dropped it got everything.
	if !live.Dropped() && len(got) != n {
		t.Errorf("live subscriber got %d of %d messages", len(got), n)
	}
	if h.Subscribers() != 0 {
		t.Errorf("%d subscribers left after close", h.Subscribers())
	}
}

func TestSubscribeAfterClose(t *testing.T) {
	h := New(0)
	h.Publish(msg(1))
	h.Close()
	h.Publish(msg(2)) // ignored
	history, sub := h.Subscribe()
	if len(history) != 1 || string(history[0]) != "1" {
		t.Errorf("history = %q", history)
	}
	if _, open := <-sub.C; open {
		t.Error("channel of a subscriber to a closed hub is open")
	}
	sub.Unsubscribe() // safe on a closed hub
}

func TestUnsubscribe(t *testing.T) {
	h := New(0)
	_, s := h.Subscribe()
	s.Unsubscribe()
	s.Unsubscribe()
	h.Publish(msg(1))
	if h.Subscribers() != 0 || s.Dropped() {
		t.Errorf("subscribers %d dropped %v", h.Subscribers(), s.Dropped())
	}
}

// benchFanOut publishes one sample batch to live subscribers, each drained
// by its own goroutine as a websocket writer would be, and waits until every
// one has it: ns/op is the delivery time of one sample to all of them.
// Stalled subscribers never read; the hub drops them after DefaultBuffer
// messages.
func benchFanOut(b *testing.B, live, stalled int) {
	h := New(DefaultBuffer)
	for range stalled {
		h.Subscribe()
	}
	var wg sync.WaitGroup
	received := make(chan struct{}, live)
	for range live {
		_, s := h.Subscribe()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range s.C {
				received <- struct{}{}
			}
		}()
	}
	// A 12-lane batch is about 2 KiB of JSON.
	payload := make([]byte, 2048)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		h.Publish(payload)
		for range live {
			<-received
		}
	}
	b.StopTimer()
	h.Close()
	wg.Wait()
}

func BenchmarkFanOut200(b *testing.B)              { benchFanOut(b, 200, 0) }
func BenchmarkFanOut199AndOneStalled(b *testing.B) { benchFanOut(b, 199, 1) }
