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

// What each workload kind and each limit a run sets makes its charts
// about: a chart of one of them is studied, and drawn once it has a value.
const kindCharts = {
  md5: ["cpu"], primes: ["cpu"], spin: ["cpu"], mem: ["mem", "memory-pressure"],
  http: ["cpu", "throughput"], load: ["throughput", "latency"],
  "disk-write": ["io-write", "iops", "io-pressure"], "disk-read": ["io-read", "iops", "io-pressure"],
};
const limitCharts = {
  cpus: ["cpu", "throttled", "throttled-periods"], "cpu-quota": ["cpu", "throttled", "throttled-periods"],
  "cpu-period": ["throttled", "throttled-periods"], "cpu-shares": ["cpu", "pressure"], "cpuset-cpus": ["cpu", "pressure"],
  memory: ["mem", "memory-pressure"], "memory-reservation": ["mem"], "memory-swap": ["mem"], "pids-limit": ["pids"],
  "device-read-bps": ["io-read"], "device-write-bps": ["io-write"], "device-read-iops": ["iops"], "device-write-iops": ["iops"],
  "blkio-weight": ["io-read", "io-write", "iops"], "blkio-weight-device": ["io-read", "io-write", "iops"],
};

// studiedCharts are the charts a run is about: those of its verdict's
// signal (first), of its lanes' workloads, and of the limits its spec
// sets (a pod's CPU and memory among them). A default the server gives
// every lane is not one the run sets.
export function studiedCharts(run, first) {
  const keys = new Set(first);
  const add = (list) => (list || []).forEach((k) => keys.add(k));
  for (const lane of (run.spec && run.spec.lanes) || []) {
    add(kindCharts[lane.workload && lane.workload.kind]);
    for (const [flag, v] of Object.entries(lane.limits || {})) if (v) add(limitCharts[flag]);
    const pod = lane.resources || {};
    for (const side of [pod.requests, pod.limits]) {
      if (side && side.cpu) add(side === pod.limits ? limitCharts.cpus : limitCharts["cpu-shares"]);
      if (side && side.memory) add(limitCharts.memory);
    }
  }
  return keys;
}

// quietFloor is, per chart, the least value that is notable by itself
// once a lane has run a few seconds (a container's start reads its
// program from disk, and a Go program holds a dozen threads).
const quietFloor = {
  cpu: 0.05, mem: 256, "io-read": 1, "io-write": 1, iops: 20, pids: 64,
  throttled: 0.5, "throttled-periods": 1, pressure: 1, "memory-pressure": 1, "io-pressure": 1,
};

// settleSeconds is how long after a lane starts its values are taken for
// the start's own.
export const settleSeconds = 3;

// notable says whether a value of a chart the run does not study is worth
// drawing: a lane at half its limit or more, or past its start at or
// above the chart's floor. A chart without a floor (a workload's own
// report) is notable at any value.
export function notable(key, v, limit, sinceStart) {
  if (v == null || !(v > 0)) return false;
  if (limit > 0 && v >= 0.5 * limit) return true;
  const floor = quietFloor[key];
  return floor === undefined || (sinceStart >= settleSeconds && v >= floor);
}
