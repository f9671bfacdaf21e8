package runner

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
)

// EventRecord is an engine event on a lane: "oom" when the kernel's OOM
// killer struck in the lane's cgroup, "die" when its process ended.
type EventRecord struct {
	AtSeconds float64 `json:"at_seconds"`
	Lane      int     `json:"lane"`
	Kind      string  `json:"kind"`
	ExitCode  *int    `json:"exit_code,omitempty"`
}

// watchEvents follows the engine's events on Limit Lab's containers until
// ctx ends, marking oom and die on their lanes as they happen. When the
// stream breaks (the engine restarted), it subscribes again, backing off,
// and then reconciles by listing the containers: a lane whose container
// stopped meanwhile is marked too. Subscribing comes before listing, so
// nothing falls between the two.
func (m *Manager) watchEvents(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for reconnect := false; ctx.Err() == nil; reconnect = true {
		sctx, cancel := context.WithCancel(ctx)
		res := m.eng.Events(sctx, client.EventsListOptions{Filters: make(client.Filters).
			Add("type", "container").Add("label", LabelRun).Add("event", "oom", "die")})
		if reconnect {
			m.reconcile(ctx)
		}
		func() {
			defer cancel()
			for {
				select {
				case msg := <-res.Messages:
					backoff = 100 * time.Millisecond
					m.onEvent(msg)
				case err := <-res.Err:
					if ctx.Err() == nil {
						m.log.Warn("engine events: stream ended; subscribing again", slog.Any("err", err), slog.Duration("after", backoff))
					}
					return
				case <-ctx.Done():
					return
				}
			}
		}()
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// onEvent marks an event on the lane of the run the container belongs to.
func (m *Manager) onEvent(msg events.Message) {
	r, ok := m.Get(msg.Actor.Attributes[LabelRun])
	if !ok {
		return
	}
	lane, err := strconv.Atoi(msg.Actor.Attributes[LabelLane])
	if err != nil {
		return
	}
	ev := EventRecord{Lane: lane, Kind: string(msg.Action)}
	if code, err := strconv.Atoi(msg.Actor.Attributes["exitCode"]); err == nil {
		ev.ExitCode = &code
	}
	at := time.Now()
	if msg.TimeNano > 0 {
		at = time.Unix(0, msg.TimeNano)
	}
	r.addEvent(ev, at)
}

// reconcile marks lanes whose containers stopped while the event stream
// was down.
func (m *Manager) reconcile(ctx context.Context) {
	list, err := m.eng.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", LabelRun)})
	if err != nil {
		m.log.Warn("engine events: reconcile", slog.Any("err", err))
		return
	}
	for _, c := range list.Items {
		if c.State == "running" || c.State == "created" {
			continue
		}
		m.onEvent(events.Message{Action: "die", Actor: events.Actor{ID: c.ID, Attributes: c.Labels}})
	}
}

func (r *Run) addEvent(ev EventRecord, at time.Time) {
	r.mu.Lock()
	if ev.Lane < 0 || ev.Lane >= len(r.view.Lanes) || r.start.IsZero() {
		r.mu.Unlock()
		return
	}
	for _, e := range r.view.Events {
		if e.Lane == ev.Lane && e.Kind == ev.Kind {
			r.mu.Unlock()
			return // once per lane: a reconcile may see what the stream saw
		}
	}
	ev.AtSeconds = at.Sub(r.start).Seconds()
	r.view.Events = append(r.view.Events, ev)
	if ev.Kind == "oom" {
		r.view.Lanes[ev.Lane].OOMKilled = true
	}
	r.mu.Unlock()
	r.publishView()
}
