package engine

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
)

// Event is an engine event on a lane's container: EventOOM when the
// kernel's OOM killer struck in its cgroup, EventDie when its process ended.
type Event struct {
	Run      string
	Lane     int
	Kind     string
	ExitCode *int
	At       time.Time
}

// Event kinds, in the engine's words.
const (
	EventOOM = "oom"
	EventDie = "die"
)

// Watch follows the engine's oom and die events on Limit Lab's containers
// until ctx ends, handing each to on. When the stream breaks (the engine
// restarted), it subscribes again, backing off up to 5 s, and then
// reconciles by listing the containers: one that stopped meanwhile is
// reported as a die. Subscribing comes before listing, so nothing falls
// between the two (as docker/cli's stats command does).
func Watch(ctx context.Context, eng Engine, log *slog.Logger, on func(Event)) {
	backoff := 100 * time.Millisecond
	for reconnect := false; ctx.Err() == nil; reconnect = true {
		sctx, cancel := context.WithCancel(ctx)
		res := eng.Events(sctx, client.EventsListOptions{Filters: make(client.Filters).
			Add("type", "container").Add("label", LabelRun).Add("event", EventOOM, EventDie)})
		if reconnect {
			reconcile(ctx, eng, log, on)
		}
		func() {
			defer cancel()
			for {
				select {
				case msg := <-res.Messages:
					backoff = 100 * time.Millisecond
					if ev, ok := decodeEvent(msg); ok {
						on(ev)
					}
				case err := <-res.Err:
					if ctx.Err() == nil {
						log.Warn("engine events: stream ended; subscribing again", slog.Any("err", err), slog.Duration("after", backoff))
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

// decodeEvent reads a lane's event from the container's labels.
func decodeEvent(msg events.Message) (Event, bool) {
	run := msg.Actor.Attributes[LabelRun]
	lane, err := strconv.Atoi(msg.Actor.Attributes[LabelLane])
	if run == "" || err != nil {
		return Event{}, false
	}
	ev := Event{Run: run, Lane: lane, Kind: string(msg.Action), At: time.Now()}
	if code, err := strconv.Atoi(msg.Actor.Attributes["exitCode"]); err == nil {
		ev.ExitCode = &code
	}
	if msg.TimeNano > 0 {
		ev.At = time.Unix(0, msg.TimeNano)
	}
	return ev, true
}

// reconcile reports the labelled containers that stopped while the event
// stream was down.
func reconcile(ctx context.Context, eng Engine, log *slog.Logger, on func(Event)) {
	list, err := eng.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", LabelRun)})
	if err != nil {
		log.Warn("engine events: reconcile", slog.Any("err", err))
		return
	}
	for _, c := range list.Items {
		if c.State == "running" || c.State == "created" {
			continue
		}
		if ev, ok := decodeEvent(events.Message{Action: EventDie, Actor: events.Actor{ID: c.ID, Attributes: c.Labels}}); ok {
			on(ev)
		}
	}
}
