package web

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"
	"github.com/limitlab/limitlab/internal/hub"
)

// live streams a run over a websocket: on connect the run's history so far,
// then every new message until the run ends. A viewer that falls behind is
// dropped by the hub and closed with a policy-violation status; it can
// reconnect and get the history again.
func (h *handlers) live(w http.ResponseWriter, r *http.Request) {
	feed, ok := h.Runs.Feed(chi.URLParam(r, "id"))
	if !ok {
		http.Error(w, "no such run", http.StatusNotFound)
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
func (h *handlers) forward(ctx context.Context, c *websocket.Conn, sub *hub.Subscriber) bool {
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

func (h *handlers) write(ctx context.Context, c *websocket.Conn, msg []byte) error {
	ctx, cancel := context.WithTimeout(ctx, h.WriteTimeout)
	defer cancel()
	return c.Write(ctx, websocket.MessageText, msg)
}

// logWriteErr logs a failed write unless it is a viewer going away.
func (h *handlers) logWriteErr(err error) {
	if errors.Is(err, context.Canceled) || websocket.CloseStatus(err) != -1 {
		return
	}
	h.Log.Debug("live: write", slog.Any("err", err))
}
