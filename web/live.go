package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"
	"github.com/limitlab/limitlab/internal/hub"
)

// live streams a run over a websocket: on connect the run's history so far,
// then every new message until the run ends. A viewer that falls behind is
// dropped by the hub and closed with a policy-violation status; it can
// reconnect and get the history again.
func (h streams) live(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	release, err := h.viewers.acquire(id, h.countedAddress(r), h.MaxViewersPerRun, h.MaxViewersPerAddress)
	if err != nil {
		writeError(w, http.StatusTooManyRequests, "viewers", err.Error())
		return
	}
	defer release()
	feed, ok := h.History.Feed(id)
	if !ok {
		writeError(w, http.StatusNotFound, "run", "no such run")
		return
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: h.AllowedOrigins})
	if err != nil {
		return // Accept has written the response
	}
	defer c.CloseNow()
	// Viewers send nothing; CloseRead handles their close and pings.
	ctx := c.CloseRead(r.Context())

	history, sub := feed.Subscribe()
	defer sub.Unsubscribe()
	for _, msg := range history {
		if err := h.write(ctx, c, msg); err != nil {
			h.logWriteErr(err)
			return
		}
	}
	if !h.forward(ctx, c, sub) {
		return
	}
	if sub.Dropped() {
		c.Close(websocket.StatusPolicyViolation, "fell behind the live stream; reconnect for the history")
		return
	}
	c.Close(websocket.StatusNormalClosure, "run ended")
}

// forward writes each message sub receives to c until sub's channel closes
// (true), or the viewer goes away or a write fails (false).
func (h streams) forward(ctx context.Context, c *websocket.Conn, sub *hub.Subscriber) bool {
	for {
		select {
		case msg, open := <-sub.C:
			if !open {
				return true
			}
			if err := h.write(ctx, c, msg); err != nil {
				h.logWriteErr(err)
				return false
			}
		case <-ctx.Done():
			return false
		}
	}
}

func (h streams) write(ctx context.Context, c *websocket.Conn, msg []byte) error {
	ctx, cancel := context.WithTimeout(ctx, h.WriteTimeout)
	defer cancel()
	return c.Write(ctx, websocket.MessageText, msg)
}

// logWriteErr logs a failed write unless it is a viewer going away.
func (h streams) logWriteErr(err error) {
	// The viewer went away as viewers do: the page closed or navigated,
	// or the request ended. Any other close status is worth a line.
	switch websocket.CloseStatus(err) {
	case websocket.StatusNormalClosure, websocket.StatusGoingAway:
		return
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	h.Log.Debug("live: write", slog.Any("err", err))
}

// Default caps on live viewers: a room's worth on one run, and a NAT's
// worth from one address.
const (
	DefaultMaxViewersPerRun     = 400
	DefaultMaxViewersPerAddress = 250
)

// viewerCount counts the live viewers per run and per client address.
type viewerCount struct {
	mu     sync.Mutex
	byRun  map[string]int
	byAddr map[string]int
}

// total is how many viewers are counted now.
func (v *viewerCount) total() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for _, k := range v.byRun {
		n += k
	}
	return n
}

// acquire counts one more viewer of run from addr, or refuses it past a
// cap; release uncounts it. A viewer of no counted address ("", a
// participant proven by the join code) is held to the run's cap only.
func (v *viewerCount) acquire(run, addr string, perRun, perAddr int) (release func(), err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.byRun == nil {
		v.byRun, v.byAddr = map[string]int{}, map[string]int{}
	}
	switch {
	case v.byRun[run] >= perRun:
		return nil, fmt.Errorf("this run has %d live viewers, the most it takes: try again later", perRun)
	case addr != "" && v.byAddr[addr] >= perAddr:
		return nil, fmt.Errorf("your address %s has %d live streams open, the most it may: close some", addr, perAddr)
	}
	v.byRun[run]++
	if addr != "" {
		v.byAddr[addr]++
	}
	return func() {
		v.mu.Lock()
		defer v.mu.Unlock()
		if v.byRun[run]--; v.byRun[run] == 0 {
			delete(v.byRun, run)
		}
		if addr == "" {
			return
		}
		if v.byAddr[addr]--; v.byAddr[addr] == 0 {
			delete(v.byAddr, addr)
		}
	}, nil
}
