// The run page: live charts from the run's websocket, and the results table
// re-rendered by the server whenever the run changes.
import { laneColour } from "./colours.js";

const root = document.getElementById("run");
const id = root.dataset.runId;
const chartsEl = document.getElementById("charts");
const stateEl = document.getElementById("state");
const errorEl = document.getElementById("run-error");
const stopButton = document.getElementById("stop");
const MiB = 1024 * 1024;
const terminal = new Set(["done", "failed", "stopped"]);

const metrics = [
  { key: "cpu", title: "CPU (cores used)", get: (s) => s.cpu, limit: (l) => l.cpu_limit || null, digits: 2 },
  { key: "mem", title: "Memory (MiB, usage less inactive file cache)", get: (s) => s.mem / MiB,
    limit: (l) => (l.applied && l.applied.memory ? l.applied.memory / MiB : null), digits: 1 },
  { key: "io", title: "Block IO (MB/s, read + write)", get: (s) => (s.read_bps + s.write_bps) / 1e6, digits: 2 },
  { key: "pids", title: "Pids", get: (s) => s.pids, digits: 0 },
  { key: "throttled", title: "CFS throttled time (ms per second)", get: (s) => (s.dt > 0 ? s.throttled_ms / s.dt : 0), digits: 1 },
  { key: "throughput", title: "Workload throughput (its unit per second)", get: (s) => s.throughput, digits: 1 },
];

let run = null;
let charts = null;
let xs = [];

function fmt(v, digits) {
  return v == null || Number.isNaN(v) ? "—" : v.toFixed(digits);
}

function buildCharts() {
  chartsEl.replaceChildren();
  xs = [];
  charts = metrics.map((m) => {
    const box = document.createElement("div");
    box.className = "chart";
    box.setAttribute("data-testid", `chart-${m.key}`);
    const h = document.createElement("h3");
    h.textContent = m.title;
    box.appendChild(h);
    chartsEl.appendChild(box);
    const series = [{ label: "t (s)", value: (u, v) => fmt(v, 2) }];
    const limits = [];
    run.lanes.forEach((l, i) => {
      const limit = m.limit ? m.limit(l) : null;
      series.push({
        label: l.name,
        stroke: laneColour(i),
        width: 2,
        spanGaps: false,
        points: { show: false },
        value: (u, v) => {
          if (v == null) return "—";
          const pct = limit ? ` (${Math.round((100 * v) / limit)}% of limit)` : "";
          return fmt(v, m.digits) + pct;
        },
      });
      if (limit) limits.push({ lane: i, limit });
    });
    limits.forEach(({ lane, limit }) => {
      series.push({ label: `${run.lanes[lane].name} limit`, stroke: laneColour(lane), width: 1, dash: [6, 4],
        points: { show: false }, value: () => fmt(limit, m.digits) });
    });
    const data = [xs, ...run.lanes.map(() => []), ...limits.map(() => [])];
    const width = Math.max(360, box.clientWidth || 600);
    const u = new uPlot({
      width, height: 220,
      scales: { x: { time: false }, y: { range: (u, min, max) => [0, Math.max(max * 1.1, 1)] } },
      axes: [{ label: "seconds" }, {}],
      series,
    }, data, box);
    return { m, u, data, limits };
  });
}

let pending = false;
function redraw() {
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => {
    pending = false;
    charts.forEach((c) => c.u.setData(c.data));
    chartsEl.dataset.points = String(xs.length);
  });
}

function addSamples(samples) {
  if (!charts) return;
  const byLane = new Map(samples.map((s) => [s.lane, s]));
  xs.push(Math.max(...samples.map((s) => s.t)));
  charts.forEach((c) => {
    run.lanes.forEach((l, i) => {
      const s = byLane.get(i);
      c.data[1 + i].push(s ? c.m.get(s) : null);
    });
    c.limits.forEach((lim, j) => c.data[1 + run.lanes.length + j].push(lim.limit));
  });
  redraw();
}

let refreshTimer = null;
function refreshResults() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(async () => {
    const res = await fetch(`/runs/${id}/results`);
    if (!res.ok) return;
    document.getElementById("results").outerHTML = await res.text();
    paintSwatches();
  }, 100);
}

function paintSwatches() {
  document.querySelectorAll(".swatch[data-lane-index]").forEach((el) => {
    el.style.background = laneColour(Number(el.dataset.laneIndex));
  });
}

function onRun(view) {
  const first = run === null;
  const limitsChanged = run && JSON.stringify(run.lanes.map((l) => [l.cpu_limit, l.applied])) !==
    JSON.stringify(view.lanes.map((l) => [l.cpu_limit, l.applied]));
  run = view;
  stateEl.textContent = view.state;
  stateEl.className = `state ${view.state}`;
  errorEl.textContent = view.error || "";
  stopButton.disabled = terminal.has(view.state);
  if (first || (limitsChanged && xs.length === 0)) buildCharts();
  refreshResults();
}

function connect() {
  const proto = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${proto}://${location.host}/api/runs/${id}/live`);
  ws.onmessage = (ev) => {
    const msg = JSON.parse(ev.data);
    if (msg.type === "run") onRun(msg.run);
    else if (msg.type === "samples") addSamples(msg.samples);
  };
  ws.onclose = (ev) => {
    // 1008: the server dropped us for falling behind; start again from the
    // history. A normal close means the run has ended.
    if (ev.code === 1008 || (ev.code !== 1000 && !(run && terminal.has(run.state)))) {
      run = null;
      setTimeout(connect, 1000);
    }
  };
}

stopButton.addEventListener("click", async () => {
  stopButton.disabled = true;
  await fetch(`/api/runs/${id}/stop`, { method: "POST" });
});

document.addEventListener("click", (ev) => {
  const b = ev.target.closest("button[data-copy]");
  if (!b) return;
  navigator.clipboard.writeText(b.dataset.copy).then(() => {
    b.textContent = "Copied";
    setTimeout(() => (b.textContent = "Copy"), 1200);
  });
});

paintSwatches();
connect();
