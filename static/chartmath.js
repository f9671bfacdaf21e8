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
// many there are, the least and the most, and the 10th and 90th
// percentiles (nearest rank), which one stray sample does not move.
export function spread(xs, ys, range) {
  const vs = xs.map((x, k) => (x >= range.min && x <= range.max ? ys[k] : null)).filter((v) => v != null);
  if (!vs.length) return { n: 0 };
  const sorted = [...vs].sort((a, b) => a - b);
  const rank = (p) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
  return { n: vs.length, min: sorted[0], max: sorted[sorted.length - 1], p10: rank(0.1), p90: rank(0.9) };
}

// tipLines are a chart's tooltip at one instant: for each lane with a
// value there, its name and its value, with its share of its limit, the
// limit and the model's expectation where it has them. values, limits
// and expected are per lane (null where there is none).
export function tipLines(names, values, limits, expected, digits) {
  const out = [];
  names.forEach((name, i) => {
    const v = values[i];
    if (v == null) return;
    let text = valueWithLimit(v, limits[i], digits);
    const more = [];
    if (limits[i] != null) more.push(`limit ${fmt(limits[i], digits)}`);
    if (expected[i] != null) more.push(`expected ${fmt(expected[i], digits)}`);
    if (more.length) text += `; ${more.join(", ")}`;
    out.push({ lane: i, name, text });
  });
  return out;
}

// shortTitle is a chart's title without its parenthesis: "CFS throttled
// time (ms per second)" is "CFS throttled time".
export function shortTitle(title) {
  const i = title.indexOf(" (");
  return i < 0 ? title : title.slice(0, i);
}
