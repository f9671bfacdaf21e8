// The run page: live charts from the run's websocket, and the results table
// re-rendered by the server whenever the run changes.
import { laneColour, paintSwatches } from "./colours.js";
import { enableCopyButtons } from "./copy.js";
import { send, errorText } from "./post.js";
import { showSteps, enableStepChanges } from "./steps.js";

const root = document.getElementById("run");
const id = root.dataset.runId;
const chartsEl = document.getElementById("charts");
const stateEl = document.getElementById("state");
const errorEl = document.getElementById("run-error");
const stopButton = document.getElementById("stop");
const MiB = 1024 * 1024;
const queueEl = document.getElementById("queue");
const controlsSection = document.getElementById("controls");

const metrics = [
  { key: "cpu", title: "CPU (cores used; dashed: limit, dotted: the model's expectation)", get: (s) => s.cpu,
    limit: (l) => l.cpu_limit || null, expected: (l) => l.expected_cores, digits: 2,
    empty: "No CPU used: a lane that computes would fill this chart." },
  { key: "mem", title: "Memory (MiB, usage less inactive file cache)", get: (s) => s.mem / MiB,
    limit: (l) => (l.applied && l.applied.memory ? l.applied.memory / MiB : null), digits: 1,
    empty: "No memory in use: a mem lane would fill this chart." },
  { key: "io-read", title: "Block IO read (MiB/s; dashed: --device-read-bps)", get: (s) => s.read_bps / MiB,
    limit: (l) => rate(l, "read_bps_device") / MiB || null, digits: 2, empty: "No block IO read: a disk-read lane would fill this chart." },
  { key: "io-write", title: "Block IO write (MiB/s; dashed: --device-write-bps)", get: (s) => s.write_bps / MiB,
    limit: (l) => rate(l, "write_bps_device") / MiB || null, digits: 2, empty: "No block IO written: a disk-write lane would fill this chart." },
  { key: "iops", title: "Block IO requests per second (cgroup: read + write; dashed: --device-*-iops)", get: (s) => s.read_iops + s.write_iops,
    limit: (l) => rate(l, "read_iops_device") + rate(l, "write_iops_device") || null, digits: 0,
    empty: "No block IO requests: a disk-read or disk-write lane would fill this chart." },
  { key: "work-iops", title: "Disk workload: its own reads or writes per second", get: (s) => (s.iops == null ? null : s.iops),
    digits: 1, disk: true, empty: "No reads or writes reported by a disk workload yet." },
  { key: "pids", title: "Pids (dashed: --pids-limit)", get: (s) => s.pids, limit: (l) => (l.applied && l.applied.pids_limit) || null,
    digits: 0, empty: "No processes counted: a running lane would fill this chart." },
  { key: "throttled", title: "CFS throttled time (ms per second)", get: (s) => (s.dt > 0 ? s.throttled_ms / s.dt : 0), digits: 1,
    empty: "No throttling: a lane under --cpus or --cpu-quota that uses all of its quota would fill this chart." },
  { key: "throttled-periods", title: "CFS periods throttled (%)",
    get: (s) => (s.periods > 0 ? (100 * s.throttled_periods) / s.periods : 0), digits: 0,
    empty: "No period was throttled: a lane under --cpus or --cpu-quota that uses all of its quota would fill this chart." },
  { key: "pressure", title: "CPU pressure: time some task waited for a CPU (ms per second, cgroup v2)",
    get: (s) => (s.pressure_ms == null || !(s.dt > 0) ? null : s.pressure_ms / s.dt), digits: 1, signal: "cpu_pressure",
    empty: "No CPU pressure: lanes that want more CPU than they are given would fill this chart." },
  { key: "memory-pressure", title: "Memory pressure: time some task waited for memory (ms per second, cgroup v2)",
    get: (s) => (s.memory_pressure_ms == null || !(s.dt > 0) ? null : s.memory_pressure_ms / s.dt), digits: 1, signal: "memory_pressure",
    empty: "No memory pressure: a lane held near its --memory would fill this chart." },
  { key: "io-pressure", title: "IO pressure: time some task waited for block IO (ms per second, cgroup v2)",
    get: (s) => (s.io_pressure_ms == null || !(s.dt > 0) ? null : s.io_pressure_ms / s.dt), digits: 1, signal: "io_pressure",
    empty: "No IO pressure: a lane that waits on a throttled or busy disk would fill this chart." },
  { key: "throughput", title: "Workload throughput (its unit per second)", get: (s) => s.throughput, digits: 1,
    empty: "No throughput reported yet: the workloads report theirs as they run." },
  { key: "latency", title: "Load: p99 latency of each interval (ms)", get: (s) => (s.latency_ms ? s.latency_ms.p99 : null),
    digits: 1, load: true, empty: "No requests answered yet: the load lanes report each interval's latency." },
];

// rate is a lane's applied block IO throttle of one kind, 0 if none.
function rate(l, key) {
  return (l.applied && l.applied[key] && l.applied[key].rate) || 0;
}

let run = null;
let charts = null;
let xs = [];
// zoom is the x range the CPU and throttling charts show: null for the
// whole run. At fast sampling it shows the CFS period at work.
let zoom = null;
const zoomable = new Set(["cpu", "throttled", "throttled-periods"]);

function fmt(v, digits) {
  return v == null || Number.isNaN(v) ? "—" : v.toFixed(digits);
}

// changeMarkers draws the run's moments on every chart: phase bounds in
// grey, live limit changes dashed in the lane's colour, and the engine's
// events: an OOM kill as a thick red line, an exit as a thin one in the
// lane's colour.
function changeMarkers(u) {
  if (!run) return;
  const { ctx } = u;
  const { top, height } = u.bbox;
  const line = (at, colour, width, dash) => {
    const x = u.valToPos(at, "x", true);
    if (!Number.isFinite(x)) return;
    ctx.setLineDash(dash);
    ctx.lineWidth = width * devicePixelRatio;
    ctx.strokeStyle = colour;
    ctx.beginPath();
    ctx.moveTo(x, top);
    ctx.lineTo(x, top + height);
    ctx.stroke();
  };
  ctx.save();
  for (const b of run.phase_bounds || []) line(b, "#9aa1ad", 1, [2, 2]);
  for (const c of run.changes || []) line(c.at_seconds, laneColour(c.lane), 2, [4, 4]);
  for (const e of run.events || []) {
    if (e.kind === "oom") line(e.at_seconds, "#b3261e", 3, []);
    else line(e.at_seconds, laneColour(e.lane), 1, []);
  }
  ctx.restore();
}

function buildCharts() {
  chartsEl.replaceChildren();
  xs = [];
  const n = run.lanes.length;
  // A chart whose signal the run's samples lack (PSI on cgroup v1 or from
  // the engine's stats) is not drawn: the page says what is missing.
  const lacks = new Set((run.missing_signals || []).map((m) => m.signal));
  const hasLoad = run.lanes.some((l) => l.workload.kind === "load");
  const hasDisk = run.lanes.some((l) => l.workload.kind.startsWith("disk-"));
  const shown = metrics.filter((m) => (!m.signal || !lacks.has(m.signal)) && (!m.load || hasLoad) &&
    (!m.disk || hasDisk));
  charts = shown.map((m) => {
    const box = document.createElement("div");
    box.className = "chart";
    box.setAttribute("data-testid", `chart-${m.key}`);
    const h = document.createElement("h3");
    h.textContent = m.title;
    const png = document.createElement("button");
    png.type = "button";
    png.className = "png";
    png.textContent = "PNG";
    png.title = "Download this chart as a PNG image";
    png.setAttribute("data-testid", `png-${m.key}`);
    h.appendChild(png);
    box.appendChild(h);
    // A chart whose every value is zero is folded to a line saying what
    // would fill it, until something does.
    const note = document.createElement("p");
    note.className = "empty-note";
    note.textContent = m.empty;
    box.appendChild(note);
    chartsEl.appendChild(box);
    const series = [{ label: "t (s)", value: (u, v) => fmt(v, 2) }];
    run.lanes.forEach((l, i) => {
      series.push({
        label: l.name,
        stroke: laneColour(i),
        width: 2,
        spanGaps: false,
        points: { show: false },
        value: (u, v, si, idx) => {
          if (v == null) return "—";
          const limit = m.limit && idx != null ? u.data[1 + n + i][idx] : null;
          const pct = limit ? ` (${Math.round((100 * v) / limit)}% of limit)` : "";
          return fmt(v, m.digits) + pct;
        },
      });
    });
    // A limit line per lane, which steps when a live change moves it.
    if (m.limit) {
      run.lanes.forEach((l, i) => {
        series.push({ label: `${l.name} limit`, stroke: laneColour(i), width: 1, dash: [6, 4],
          points: { show: false }, value: (u, v) => fmt(v, m.digits) });
      });
    }
    // The model's expected cores per lane, which moves as lanes start, end
    // or change; shown only for the lanes the model applies to.
    if (m.expected) {
      run.lanes.forEach((l, i) => {
        series.push({ label: `${l.name} expected`, stroke: laneColour(i), width: 1, dash: [1, 3],
          points: { show: false }, show: l.modelled, value: (u, v) => fmt(v, m.digits) });
      });
    }
    const perLane = () => run.lanes.map(() => []);
    const data = [xs, ...perLane(), ...(m.limit ? perLane() : []), ...(m.expected ? perLane() : [])];
    const width = Math.max(360, box.clientWidth || 600);
    const u = new uPlot({
      width, height: 220,
      scales: { x: { time: false }, y: { range: (u, min, max) => [0, Math.max(max * 1.1, 1)] } },
      axes: [{ label: "seconds" }, {}],
      series,
      hooks: { draw: [changeMarkers] },
    }, data, box);
    png.addEventListener("click", () => downloadPNG(u, m));
    // nonzero counts the lanes' values above zero: a chart with none has
    // nothing to show (data-nonzero, for the tests).
    return { m, u, data, box, nonzero: 0 };
  });
}

// downloadPNG saves a chart as drawn, with its title and lane names above
// it on white, since uPlot draws the title and legend outside the canvas.
function downloadPNG(u, m) {
  const src = u.ctx.canvas;
  const dpr = devicePixelRatio || 1;
  const head = Math.round(44 * dpr);
  const out = document.createElement("canvas");
  out.width = src.width;
  out.height = src.height + head;
  const ctx = out.getContext("2d");
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, out.width, out.height);
  ctx.fillStyle = "#1d2430";
  ctx.font = `${Math.round(13 * dpr)}px sans-serif`;
  ctx.fillText(`${run.name}: ${m.title}`, 8 * dpr, 16 * dpr);
  let x = 8 * dpr;
  run.lanes.forEach((l, i) => {
    ctx.fillStyle = laneColour(i);
    ctx.fillText(`■ ${l.name}`, x, 36 * dpr);
    x += ctx.measureText(`■ ${l.name}`).width + 14 * dpr;
  });
  ctx.drawImage(src, 0, head);
  out.toBlob((blob) => {
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = `limitlab-${id}-${m.key}.png`;
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  }, "image/png");
}

let pending = false;
function redraw() {
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => {
    pending = false;
    charts.forEach((c) => {
      const zoomed = zoom && zoomable.has(c.m.key);
      c.u.setData(c.data, !zoomed);
      if (zoomed) showZoom(c);
      c.box.dataset.nonzero = String(c.nonzero);
      c.box.classList.toggle("empty", c.nonzero === 0 && xs.length > 0);
    });
    chartsEl.dataset.points = String(xs.length);
  });
}

// showZoom sets a chart's x range to the zoom and notes, per lane, how far
// its values swing within it (data-spread, for the tests).
function showZoom(c) {
  const range = zoom || { min: xs.length ? xs[0] : 0, max: xs.length ? xs[xs.length - 1] : 1 };
  c.u.setScale("x", range);
  c.box.dataset.zoom = zoom ? `${range.min.toFixed(2)}-${range.max.toFixed(2)}` : "all";
  if (!zoom) return;
  c.box.dataset.spread = JSON.stringify(run.lanes.map((l, i) => {
    const vs = xs.map((x, k) => (x >= range.min && x <= range.max ? c.data[1 + i][k] : null)).filter((v) => v != null);
    return vs.length ? { n: vs.length, min: Math.min(...vs), max: Math.max(...vs) } : { n: 0 };
  }));
}

document.querySelectorAll("[data-zoom]").forEach((b) => {
  b.addEventListener("click", () => {
    if (!run || !charts) return;
    const k = b.dataset.zoom;
    if (k === "all") {
      zoom = null;
    } else {
      const lane = run.lanes[Number(k)];
      const end = lane.ended_at > lane.started_at ? lane.ended_at : xs[xs.length - 1] || 0;
      const mid = (lane.started_at + end) / 2;
      zoom = { min: Math.max(0, mid - 0.5), max: mid + 0.5 };
    }
    charts.filter((c) => zoomable.has(c.m.key)).forEach(showZoom);
  });
});

function addSamples(samples) {
  if (!charts) return;
  const byLane = new Map(samples.map((s) => [s.lane, s]));
  xs.push(Math.max(...samples.map((s) => s.t)));
  const n = run.lanes.length;
  charts.forEach((c) => {
    run.lanes.forEach((l, i) => {
      const s = byLane.get(i);
      const v = s ? c.m.get(s) : null;
      c.data[1 + i].push(v);
      if (v > 0) c.nonzero++;
      if (c.m.limit) c.data[1 + n + i].push(s ? c.m.limit(l) : null);
      if (c.m.expected) c.data[1 + 2 * n + i].push(s ? c.m.expected(l) : null);
    });
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

function onRun(view) {
  const first = run === null;
  run = view;
  stateEl.textContent = view.state;
  stateEl.className = `state ${view.state}`;
  errorEl.textContent = view.error || "";
  if (queueEl) {
    queueEl.hidden = view.state !== "queued";
    let waiting = view.queue_position === 1 ? "Waiting in the queue: you are next" : `Waiting in the queue: position ${view.queue_position || "…"}`;
    if (view.series && view.series.index > 0 && !view.queue_position) {
      waiting = `Run ${view.series.index + 1} of ${view.series.runs.length} of a series: it joins the queue when the run before it ends`;
    }
    queueEl.textContent = view.state === "queued" ? waiting : "";
  }
  if (stopButton) stopButton.disabled = view.ended;
  if (first) buildCharts();
  else redraw(); // markers of new changes
  showControls(view);
  showSteps(view);
  refreshResults();
}

// Live limit controls: one form per lane, shown while the lane runs, with
// the limits the engine applied as placeholders.
const controls = document.querySelectorAll("form.lane-control");

function showControls(view) {
  if (!controlsSection) return;
  controlsSection.hidden = view.ended;
  controls.forEach((form) => {
    const lane = view.lanes[Number(form.dataset.lane)];
    form.hidden = !lane || lane.state !== "running" || view.ended;
    if (!lane || !lane.applied) return;
    const a = lane.applied;
    const current = {
      "cpus": a.nano_cpus ? String(a.nano_cpus / 1e9) : "",
      "cpu-shares": a.cpu_shares ? String(a.cpu_shares) : "",
      "cpuset-cpus": a.cpuset_cpus || "",
      "memory": a.memory ? `${Math.round(a.memory / MiB)}m` : "",
      "pids-limit": a.pids_limit ? String(a.pids_limit) : "",
    };
    form.querySelectorAll("input[data-field]").forEach((input) => {
      input.placeholder = current[input.dataset.field] || "none";
    });
  });
}

controls.forEach((form) => {
  form.querySelectorAll("input[data-mirror]").forEach((slider) => {
    const field = form.querySelector(`input[data-field="${slider.dataset.mirror}"]`);
    slider.addEventListener("input", () => { field.value = slider.value; });
  });
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const change = {};
    form.querySelectorAll("input[data-field]").forEach((input) => {
      if (input.value.trim() !== "") change[input.dataset.field] = input.value.trim();
    });
    const errs = form.querySelector("[data-errors]");
    errs.textContent = "";
    const res = await send(`/api/runs/${id}/lanes/${form.dataset.lane}/limits`, { body: change });
    if (res.ok) {
      form.querySelectorAll("input[data-field]").forEach((input) => { input.value = ""; });
      return;
    }
    errs.textContent = res.errors.map(errorText).join("; ");
  });
});

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
    if (ev.code === 1008 || (ev.code !== 1000 && !(run && run.ended))) {
      run = null;
      setTimeout(connect, 1000);
    }
  };
}

if (stopButton) {
  stopButton.addEventListener("click", async () => {
    stopButton.disabled = true;
    const res = await send(`/api/runs/${id}/stop`);
    if (!res.ok) {
      errorEl.textContent = res.errors.map(errorText).join("; ");
      stopButton.disabled = false;
    }
  });
}
const permalink = document.getElementById("permalink");
if (permalink) permalink.dataset.copy = `${location.origin}/runs/${id}`;

enableCopyButtons();
enableStepChanges(id, () => run);

paintSwatches();
connect();
