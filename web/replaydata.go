package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/runner"
)

// MaxReplaySamples bounds the lane-samples a published run holds outside
// its lanes' zoom windows: a 60 s, 4-lane run at 250 ms (960) is kept
// whole; a longer or wider one has its ticks merged, as many at a time as
// keep it under the bound.
const MaxReplaySamples = 2400

// replayStream is a run's stream as a published page holds it: its
// figures to four significant digits (the charts show two or three), and,
// past MaxReplaySamples, runs of ticks merged into one, except inside each
// lane's zoom window (the second the zoom buttons show, from the middle of
// its life), which keeps every tick. note says what was merged.
func replayStream(v runner.RunView, stream []json.RawMessage) (out []json.RawMessage, note string, err error) {
	samples := 0
	for _, raw := range stream {
		if bytes.HasPrefix(raw, []byte(`{"type":"samples"`)) {
			samples += bytes.Count(raw, []byte(`"lane":`))
		}
	}
	every := 1
	if samples > MaxReplaySamples {
		every = (samples + MaxReplaySamples - 1) / MaxReplaySamples
	}
	var merging *tick
	var lastView []byte
	for i, raw := range stream {
		var msg map[string]any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&msg); err != nil {
			return nil, "", fmt.Errorf("message %d of the run's stream: %w", i, err)
		}
		kind, _ := msg["type"].(string)
		if kind != string(runner.KindSamples) {
			switch kind {
			case string(runner.KindHost):
				msg = roundAll(msg).(map[string]any)
			case string(runner.KindRun):
				msg["run"] = replayView(msg["run"])
			}
			b, err := json.Marshal(msg)
			if err != nil {
				return nil, "", err
			}
			if kind == string(runner.KindRun) {
				// A view that moved only in what the replay does not draw
				// (a lane's results, its kernel files) is left out.
				if bytes.Equal(b, lastView) {
					continue
				}
				lastView = b
			}
			out = append(out, b)
			continue
		}
		batch, _ := msg["samples"].([]any)
		if every == 1 || inZoom(v, batch) {
			if merging != nil {
				out, merging = append(out, merging.message()), nil
			}
			msg["samples"] = roundAll(batch)
			delete(msg, "sent_us")
			b, err := json.Marshal(msg)
			if err != nil {
				return nil, "", err
			}
			out = append(out, b)
			continue
		}
		if merging == nil {
			merging = &tick{}
		}
		merging.add(batch)
		if merging.n == every {
			out, merging = append(out, merging.message()), nil
		}
	}
	if merging != nil {
		out = append(out, merging.message())
	}
	if every > 1 {
		note = fmt.Sprintf("Kept small: outside each lane's zoomed second, every %d ticks of the run (%d lane-samples in all) are drawn as one, their rates averaged over the time they cover and their latencies the worst of them. The JSON export has every sample.", every, samples)
	}
	return out, note, nil
}

// The keys of a run's view, and of its lanes, that the replay draws from:
// what static/replay.js, charts.js, metrics.js, chartmath.js and steps.js
// read of a view. The page holds the run's final view whole; the views on
// the way there need only these.
var (
	replayRunKeys  = []string{"id", "name", "state", "ended", "error", "lanes", "changes", "events", "phase_bounds", "steps", "missing_signals", "noise", "verdict_metric"}
	replayLaneKeys = []string{"index", "name", "state", "chart_limits", "expected_cores", "modelled", "started_at", "ended_at", "load", "disk"}
)

// replayView is a run's view cut to the keys the replay draws from.
func replayView(v any) any {
	view, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := keep(view, replayRunKeys)
	if lanes, ok := out["lanes"].([]any); ok {
		cut := make([]any, len(lanes))
		for i, l := range lanes {
			if m, ok := l.(map[string]any); ok {
				cut[i] = keep(m, replayLaneKeys)
			}
		}
		out["lanes"] = cut
	}
	return out
}

func keep(m map[string]any, keys []string) map[string]any {
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// inZoom says whether a tick falls in a lane's zoom window, as the run
// page's zoomWindow (static/chartmath.js) places it.
func inZoom(v runner.RunView, batch []any) bool {
	for _, s := range batch {
		m, _ := s.(map[string]any)
		t := number(m["t"])
		for _, l := range v.Lanes {
			end := l.EndedAt
			if end <= l.StartedAt {
				end = v.Elapsed
			}
			mid := (l.StartedAt + end) / 2
			if t >= max(0, mid-0.5)-0.5 && t <= mid+1 {
				return true
			}
		}
	}
	return false
}

// tick merges ticks into one: per lane, each rate averaged over the time
// the ticks cover (weighted by dt), the interval counters summed, the
// latency the worst, and the time the last one's.
type tick struct {
	n     int
	lanes map[string]map[string]any
	order []string
}

// summed are the figures that count within an interval; the rest are
// rates or levels, averaged.
var summed = map[string]bool{"dt": true, "periods": true, "throttled_periods": true, "failures": true}

func (k *tick) add(batch []any) {
	k.n++
	if k.lanes == nil {
		k.lanes = map[string]map[string]any{}
	}
	for _, s := range batch {
		m, _ := s.(map[string]any)
		lane := fmt.Sprint(m["lane"])
		acc, ok := k.lanes[lane]
		if !ok {
			acc = map[string]any{}
			k.lanes[lane] = acc
			k.order = append(k.order, lane)
		}
		dt := number(m["dt"])
		prev := number(acc["dt"])
		for key, val := range m {
			switch {
			case key == "lane" || key == "t":
				acc[key] = val
			case summed[key]:
				acc[key] = number(acc[key]) + number(val)
			default:
				if obj, ok := val.(map[string]any); ok {
					acc[key] = worst(acc[key], obj)
				} else if _, ok := val.(json.Number); ok {
					_, had := acc[key]
					acc[key] = mean(number(acc[key]), prev, number(val), dt, had)
				}
			}
		}
	}
}

// mean is the dt-weighted mean of a running mean a over da and the next
// figure b over db.
func mean(a, da, b, db float64, had bool) float64 {
	if !had || da+db == 0 {
		return b
	}
	return (a*da + b*db) / (da + db)
}

// worst keeps, of a latency summary, the largest of each figure.
func worst(acc any, obj map[string]any) map[string]any {
	out, _ := acc.(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	for key, val := range obj {
		if n := number(val); n > number(out[key]) || out[key] == nil {
			out[key] = n
		}
	}
	return out
}

func (k *tick) message() json.RawMessage {
	batch := make([]any, 0, len(k.order))
	for _, lane := range k.order {
		acc := k.lanes[lane]
		if dt := number(acc["dt"]); dt > 0 && acc["throttled_periods"] != nil && number(acc["periods"]) > 0 {
			acc["throttled_pct"] = engine.ThrottledPct(number(acc["periods"]), number(acc["throttled_periods"]))
		}
		batch = append(batch, acc)
	}
	b, _ := json.Marshal(map[string]any{"type": runner.KindSamples, "samples": roundAll(batch)})
	return b
}

// roundAll rounds every figure under v to four significant digits.
func roundAll(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = roundAll(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = roundAll(e)
		}
		return x
	case json.Number, float64:
		f := number(x)
		if f == math.Trunc(f) && math.Abs(f) < 1e15 {
			return json.Number(strconv.FormatFloat(f, 'f', -1, 64))
		}
		return json.Number(strconv.FormatFloat(f, 'g', 4, 64))
	}
	return v
}

func number(v any) float64 {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case float64:
		return x
	}
	return 0
}
