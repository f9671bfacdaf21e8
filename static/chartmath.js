// The charts' small sums, pure and tested with node --test
// (static/test/chartmath.test.js).

// fmt is a figure to digits places, or a dash where there is none.
export function fmt(v, digits) {
  return v == null || Number.isNaN(v) ? "—" : v.toFixed(digits);
}

// valueWithLimit is a lane's value as a chart's legend shows it: with its
// share of the lane's limit where the lane has one.
export function valueWithLimit(v, limit, digits) {
  if (v == null) return "—";
  const pct = limit ? ` (${Math.round((100 * v) / limit)}% of limit)` : "";
  return fmt(v, digits) + pct;
}

// zoomWindow is the second around the middle of a lane's life, from its
// start to its end (or to lastX while it runs), never before 0.
export function zoomWindow(lane, lastX) {
  const end = lane.ended_at > lane.started_at ? lane.ended_at : lastX || 0;
  const mid = (lane.started_at + end) / 2;
  return { min: Math.max(0, mid - 0.5), max: mid + 0.5 };
}

// spread is how far one lane's values ys (at xs) swing within range: how
// many there are, the least and the most.
export function spread(xs, ys, range) {
  const vs = xs.map((x, k) => (x >= range.min && x <= range.max ? ys[k] : null)).filter((v) => v != null);
  return vs.length ? { n: vs.length, min: Math.min(...vs), max: Math.max(...vs) } : { n: 0 };
}
