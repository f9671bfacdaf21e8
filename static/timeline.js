// A recorded run's stream on its own clock, pure and tested with node
// --test (static/test/timeline.test.js).

// timeline gives each message of a run's stream the run's time at which
// it came: a tick's samples and the host's load carry theirs; a change of
// the run's view came with the tick before it. end is the last time.
export function timeline(stream) {
  let t = 0;
  const messages = stream.map((msg) => {
    if (msg.type === "samples" && msg.samples.length) t = Math.max(t, ...msg.samples.map((s) => s.t));
    else if (msg.type === "host" && msg.host) t = Math.max(t, msg.host.t);
    return { at: t, msg };
  });
  return { messages, end: t };
}

// startAt is where a link asks the replay to start: #t=12s (or #t=12) at
// that second, #phase=2 at the start of the second phase (its first bound),
// and otherwise at the end, the whole run drawn.
export function startAt(hash, bounds, end) {
  const params = new URLSearchParams((hash || "").replace(/^#/, ""));
  const t = params.get("t");
  if (t !== null) {
    const s = Number.parseFloat(t);
    if (Number.isFinite(s)) return Math.max(0, Math.min(end, s));
  }
  const phase = Number.parseInt(params.get("phase"), 10);
  if (phase === 1) return 0;
  if (phase > 1 && phase - 2 < bounds.length) return Math.min(end, bounds[phase - 2]);
  return end;
}
