// A published run: the run's stream, recorded as it was published live,
// played again into the same charts and steps as the run page's, with play
// and pause, a time slider, three speeds, the phases to jump to, and
// #t=12s or #phase=2 in the address to start at. It needs no server: the
// page holds the stream (see web/publish.go) and esbuild bundles this
// module with the chart modules it imports.
import { paintSwatches } from "./colours.js";
import { enableCopyButtons } from "./copy.js";
import { showSteps } from "./steps.js";
import { createCharts } from "./charts.js";
import { fmt } from "./chartmath.js";
import { timeline, startAt } from "./timeline.js";

const data = JSON.parse(document.getElementById("replay-data").textContent);
const final = data.run;
const { messages, end } = timeline(data.stream);

const chartsEl = document.getElementById("charts");
const stateEl = document.getElementById("state");
const verdictEl = document.querySelector("[data-testid=verdict]");
const pending = document.getElementById("verdict-pending");
const playButton = document.getElementById("play");
const slider = document.getElementById("seek");
const clockEl = document.getElementById("clock");
const speedEl = document.getElementById("speed");

let run = null; // the run's view as of the replay's position
let charts = null;
let next = 0; // the next message to apply
let at = 0; // the replay's position, in seconds of the run
let playing = false;
let seenEnd = false;

function apply(msg) {
  if (msg.type === "run") {
    const first = run === null;
    run = msg.run;
    stateEl.textContent = run.state;
    stateEl.className = `state ${run.state}`;
    if (first) charts = createCharts(chartsEl, final.id, () => run);
    else charts.redraw();
    showSteps(run);
  } else if (msg.type === "samples" && charts) {
    charts.add(msg.samples);
  } else if (msg.type === "host" && charts) {
    charts.addHost(msg.host);
  }
}

// seek moves the replay to t: forward by applying the messages up to it,
// back by drawing again from the start.
function seek(t) {
  t = Math.max(0, Math.min(end, t));
  if (t < at || next === 0) {
    run = null;
    charts = null;
    next = 0;
    chartsEl.replaceChildren();
  }
  while (next < messages.length && messages[next].at <= t) apply(messages[next++].msg);
  at = t;
  if (at >= end) seenEnd = true;
  // The verdict is the run's last word: shown once the replay has reached
  // the end (and while one looks about, paused, after that).
  if (verdictEl) verdictEl.hidden = !seenEnd;
  if (pending) pending.hidden = seenEnd || !verdictEl;
  slider.value = String(at);
  clockEl.textContent = `${fmt(at, 1)} s of ${fmt(end, 1)} s`;
  document.body.dataset.replayAt = at.toFixed(2);
  document.body.dataset.replayEnded = String(at >= end);
}

let last = 0;
function tick(now) {
  if (!playing) return;
  const speed = Number(speedEl.value) || 1;
  seek(at + ((now - last) / 1000) * speed);
  last = now;
  if (at >= end) {
    setPlaying(false);
    return;
  }
  requestAnimationFrame(tick);
}

function setPlaying(on) {
  playing = on;
  playButton.textContent = on ? "Pause" : "Play";
  playButton.dataset.playing = String(on);
  if (on) {
    if (at >= end) seek(0);
    // Played, the run gives its verdict at its end, as it did live.
    seenEnd = false;
    last = performance.now();
    requestAnimationFrame(tick);
  }
}

playButton.addEventListener("click", () => setPlaying(!playing));
slider.max = String(end);
slider.addEventListener("input", () => seek(Number(slider.value)));
document.querySelectorAll("[data-seek]").forEach((b) => {
  b.addEventListener("click", () => seek(Number(b.dataset.seek)));
});
document.querySelectorAll("[data-zoom]").forEach((b) => {
  b.addEventListener("click", () => { if (charts) charts.zoomTo(b.dataset.zoom); });
});

// The frame's height, for a tutorial page that sizes its iframe to it
// (docs/tutorials.md).
if (window.parent !== window) {
  new ResizeObserver(() => {
    window.parent.postMessage({ limitlab: "height", height: document.documentElement.scrollHeight }, "*");
  }).observe(document.body);
}

enableCopyButtons();
paintSwatches();
seek(startAt(location.hash, final.phase_bounds || [], end));
// When the first charts were drawn, for docs/benchmarks.md.
requestAnimationFrame(() => { document.body.dataset.drawnMs = performance.now().toFixed(0); });
addEventListener("hashchange", () => seek(startAt(location.hash, final.phase_bounds || [], end)));
