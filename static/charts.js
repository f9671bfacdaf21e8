// The run's live charts (uPlot, loaded by the page as a global): one per
// metric the run can fill, a series per lane, its limit dashed and the
// model's expectation dotted, the run's moments marked, and a zoom of the
// CPU and throttling charts onto one second of a lane.
import { laneColour } from "./colours.js";
import { fmt, zoomWindow, spread, tipLines, shortTitle, studiedCharts, notable } from "./chartmath.js";
import { shownMetrics, signalFirst, zoomable } from "./metrics.js";
import { downloadPNG } from "./png.js";

// pageLegend is the one legend of a run's charts: each lane's colour and
// name once, and what the line styles mean.
function pageLegend(run) {
  const box = document.createElement("div");
  box.className = "chart-legend";
  box.setAttribute("data-testid", "chart-legend");
  run.lanes.forEach((l, i) => {
    const item = document.createElement("span");
    item.className = "legend-lane";
    const sw = document.createElement("span");
    sw.className = "swatch";
    sw.style.background = laneColour(i);
    item.append(sw, l.name);
    box.appendChild(item);
  });
  const key = document.createElement("span");
  key.className = "legend-key";
  key.textContent = "solid: measured · dashed: the lane's limit · dotted: the model's expectation · hover a chart for the values";
  box.appendChild(key);
  return box;
}

// showTip fills a chart's tooltip for the instant under the cursor: each
// lane's value there, with its limit and expectation where the chart has
// them, beside the cursor; hidden off the chart.
function showTip(u, tip, m, lanes) {
  const idx = u.cursor.idx;
  if (idx == null || u.cursor.left == null || u.cursor.left < 0) {
    tip.hidden = true;
    return;
  }
  const n = lanes.length;
  const at = (k) => (u.data[k] ? u.data[k][idx] : null);
  const values = lanes.map((l, i) => at(1 + i));
  const limits = lanes.map((l, i) => (m.limit ? at(1 + n + i) : null));
  const expected = lanes.map((l, i) => (m.expected && l.modelled ? at(1 + (m.limit ? 2 : 1) * n + i) : null));
  const lines = tipLines(lanes.map((l) => l.name), values, limits, expected, m.digits);
  const head = document.createElement("div");
  head.className = "tip-t";
  head.textContent = `${fmt(u.data[0][idx], 2)} s`;
  const rows = lines.map((line) => {
    const row = document.createElement("div");
    const sw = document.createElement("span");
    sw.className = "swatch";
    sw.style.background = laneColour(line.lane);
    row.append(sw, `${line.name}: ${line.text}`);
    return row;
  });
  tip.replaceChildren(head, ...rows);
  tip.hidden = false;
  const left = u.cursor.left + 12;
  tip.style.left = `${Math.min(left, Math.max(0, u.over.clientWidth - tip.offsetWidth))}px`;
  tip.style.top = `${Math.max(0, u.cursor.top - tip.offsetHeight - 8)}px`;
}

// foldEmpty names the folded charts on one line: those with nothing to
// draw, then those the run does not study in which nothing notable
// happened. A click on a name unfolds its chart. The line is made anew
// only when which charts it names changes (a name replaced under the
// pointer at every tick would never take a click); each tick only
// renews what the names say on hover.
function foldEmpty(line, empty, quiet, unfold) {
  const why = (c) => (c.box.classList.contains("empty") ? c.m.empty
    : `At most ${fmt(c.peak, c.m.digits)}${c.peakLimit ? ` against a limit of ${fmt(c.peakLimit, c.m.digits)}` : ""}: no lane came near its limit or did more than its start needed. Click to draw it.`);
  const names = `${empty.map((c) => c.m.key)}|${quiet.map((c) => c.m.key)}`;
  if (line.dataset.names === names) {
    const all = [...empty, ...quiet];
    line.querySelectorAll(".folded").forEach((b, i) => { b.title = why(all[i]); });
    return;
  }
  line.dataset.names = names;
  line.hidden = empty.length + quiet.length === 0;
  line.replaceChildren();
  const group = (label, list) => {
    if (!list.length) return;
    if (line.childNodes.length) line.appendChild(document.createTextNode(". "));
    line.appendChild(document.createTextNode(label));
    list.forEach((c, i) => {
      const name = document.createElement("button");
      name.type = "button";
      name.className = "folded";
      name.textContent = shortTitle(c.m.title);
      name.title = why(c);
      name.dataset.key = c.m.key;
      name.addEventListener("click", () => unfold(c));
      if (i > 0) line.appendChild(document.createTextNode(", "));
      line.appendChild(name);
    });
  };
  group("Nothing to draw yet: ", empty);
  group("Nothing notable, not what this run studies: ", quiet);
}

// createCharts draws the charts of a run into el; getRun is the run's
// latest view (its lanes' limits, changes and events move as it runs).
export function createCharts(el, runID, getRun) {
  const first = getRun();
  const n = first.lanes.length;
  const xs = [];
  let zoom = null; // the x range the zoomable charts show: null for the whole run
  el.replaceChildren();
  el.appendChild(pageLegend(first));
  // The charts with nothing to draw fold into this one line, which names
  // them; each name says, on hover, what would fill its chart.
  const folded = document.createElement("p");
  folded.className = "empty-charts";
  folded.setAttribute("data-testid", "empty-charts");
  folded.hidden = true;
  el.appendChild(folded);

  // markers draws the run's moments on every chart: phase bounds in grey,
  // live limit changes dashed in the lane's colour, and the engine's
  // events: an OOM kill as a thick red line, an exit as a thin one.
  const markers = (u) => {
    const run = getRun();
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
  };

  // The charts the run is about are drawn once they have a value; the
  // others only once something notable happens in them (chartmath.js).
  const studied = studiedCharts(first, signalFirst[first.verdict_metric] || []);
  const charts = shownMetrics(first).map((m) => {
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
    el.appendChild(box);
    const series = [{ label: "t (s)" }];
    first.lanes.forEach((l, i) => {
      series.push({ label: l.name, stroke: laneColour(i), width: 2, spanGaps: false, points: { show: false } });
    });
    // A limit line per lane, which steps when a live change moves it.
    if (m.limit) {
      first.lanes.forEach((l, i) => {
        series.push({ label: `${l.name} limit`, stroke: laneColour(i), width: 1, dash: [6, 4], points: { show: false } });
      });
    }
    // The model's expected cores per lane, shown only for the lanes the
    // model applies to.
    if (m.expected) {
      first.lanes.forEach((l, i) => {
        series.push({ label: `${l.name} expected`, stroke: laneColour(i), width: 1, dash: [1, 3],
          points: { show: false }, show: l.modelled });
      });
    }
    const perLane = () => first.lanes.map(() => []);
    const data = [xs, ...perLane(), ...(m.limit ? perLane() : []), ...(m.expected ? perLane() : [])];
    const width = Math.max(300, box.clientWidth || 600);
    // One legend for the page (pageLegend); hovering a chart shows its
    // lanes' values at that instant in a tooltip instead.
    const tip = document.createElement("div");
    tip.className = "chart-tip";
    tip.setAttribute("data-testid", `tip-${m.key}`);
    tip.hidden = true;
    const u = new uPlot({
      width, height: 220,
      legend: { show: false },
      scales: { x: { time: false }, y: { range: (u, min, max) => [0, Math.max(max * 1.1, 1)] } },
      axes: [{ label: "seconds" }, {}],
      series,
      hooks: { draw: [markers], setCursor: [(u) => showTip(u, tip, m, getRun().lanes)] },
    }, data, box);
    u.over.appendChild(tip);
    png.addEventListener("click", () => downloadPNG(u, `${getRun().name}: ${m.title}`, getRun().lanes, `limitlab-${runID}-${m.key}.png`));
    // nonzero counts the lanes' values above zero: a chart with none has
    // nothing to show (data-nonzero, for the tests).
    return { m, u, data, box, nonzero: 0, studied: studied.has(m.key), notable: false, shown: false, peak: 0, peakLimit: 0 };
  });

  // The host band: what else used the CPUs while the run ran (other work
  // than the run, the server and the engine) and what the hypervisor
  // stole, in cores, where the server reads the engine's host.
  let host = null;
  if (first.noise && first.noise.measured) {
    const box = document.createElement("div");
    box.className = "chart host-band";
    box.setAttribute("data-testid", "chart-host");
    const h = document.createElement("h3");
    h.textContent = "Host: other work than this run (solid), and steal (dashed), in cores";
    box.appendChild(h);
    el.appendChild(box);
    const hx = [];
    const data = [hx, [], []];
    const u = new uPlot({
      width: Math.max(300, box.clientWidth || 600), height: 120,
      legend: { show: false },
      scales: { x: { time: false }, y: { range: (u, min, max) => [0, Math.max(max * 1.1, 0.5)] } },
      axes: [{ label: "seconds" }, {}],
      series: [{ label: "t (s)", value: (u, v) => fmt(v, 2) },
        { label: "other work", stroke: "#6b4e2e", width: 2, points: { show: false }, value: (u, v) => fmt(v, 2) },
        { label: "steal", stroke: "#b3261e", width: 1, dash: [4, 4], points: { show: false }, value: (u, v) => fmt(v, 2) }],
    }, data, box);
    host = { u, data, box, n: 0 };
  }

  // showZoom sets a chart's x range to the zoom and notes, per lane, how
  // far its values swing within it (data-spread, for the tests).
  const showZoom = (c) => {
    const range = zoom || { min: xs.length ? xs[0] : 0, max: xs.length ? xs[xs.length - 1] : 1 };
    c.u.setScale("x", range);
    c.box.dataset.zoom = zoom ? `${range.min.toFixed(2)}-${range.max.toFixed(2)}` : "all";
    if (!zoom) return;
    c.box.dataset.spread = JSON.stringify(first.lanes.map((l, i) => spread(xs, c.data[1 + i], range)));
  };

  let pending = false;
  const redraw = () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      charts.forEach((c) => {
        const zoomed = zoom && zoomable.has(c.m.key);
        c.u.setData(c.data, !zoomed);
        if (zoomed) showZoom(c);
        c.box.dataset.nonzero = String(c.nonzero);
        const empty = c.nonzero === 0 && xs.length > 0;
        const quiet = !empty && !c.studied && !c.notable && !c.shown;
        c.box.classList.toggle("empty", empty);
        c.box.classList.toggle("quiet", quiet);
      });
      foldEmpty(folded, charts.filter((c) => c.box.classList.contains("empty")),
        charts.filter((c) => c.box.classList.contains("quiet")), (c) => {
          c.shown = true;
          redraw();
        });
      el.dataset.points = String(xs.length);
      if (host) {
        host.u.setData(host.data);
        host.box.dataset.points = String(host.n);
      }
    });
  };

  return {
    redraw,
    // add appends one tick's samples, one per lane at most.
    add(samples) {
      const run = getRun();
      const byLane = new Map(samples.map((s) => [s.lane, s]));
      xs.push(Math.max(...samples.map((s) => s.t)));
      charts.forEach((c) => {
        run.lanes.forEach((l, i) => {
          const s = byLane.get(i);
          const v = s ? c.m.get(s) : null;
          c.data[1 + i].push(v);
          if (v > 0) c.nonzero++;
          const limit = s && c.m.limit ? c.m.limit(l) : null;
          if (v > c.peak) [c.peak, c.peakLimit] = [v, limit];
          if (!c.notable && !c.studied) c.notable = notable(c.m.key, v, limit, s ? s.t - (l.started_at || 0) : 0);
          if (c.m.limit) c.data[1 + n + i].push(limit);
          if (c.m.expected) c.data[1 + 2 * n + i].push(s ? c.m.expected(l) : null);
        });
      });
      redraw();
    },
    // addHost appends one tick of the host's load to the host band.
    addHost(h) {
      if (!host) return;
      host.data[0].push(h.t);
      host.data[1].push(h.foreign_cores);
      host.data[2].push(h.steal_cores);
      host.n++;
      redraw();
    },
    // zoomTo narrows the zoomable charts to a second of lane k's life, or
    // shows the whole run again for "all".
    zoomTo(k) {
      zoom = k === "all" ? null : zoomWindow(getRun().lanes[Number(k)], xs[xs.length - 1]);
      charts.filter((c) => zoomable.has(c.m.key)).forEach(showZoom);
    },
  };
}
