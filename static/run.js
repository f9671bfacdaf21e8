// The run page: live charts from the run's websocket, the results table
// re-rendered by the server whenever the run changes, the live limit
// controls and the guided steps. Each concern is a module of its own.
import { paintSwatches } from "./colours.js";
import { enableCopyButtons } from "./copy.js";
import { send, errorText } from "./post.js";
import { showSteps, enableStepChanges } from "./steps.js";
import { createCharts } from "./charts.js";
import { enableControls } from "./controls.js";
import { follow } from "./live_run.js";

const root = document.getElementById("run");
const id = root.dataset.runId;
const chartsEl = document.getElementById("charts");
const stateEl = document.getElementById("state");
const errorEl = document.getElementById("run-error");
const stopButton = document.getElementById("stop");
const queueEl = document.getElementById("queue");

let run = null; // the run's latest view
let charts = null;
const showControls = enableControls(id);

// refreshResults has the server render the results table again, once the
// run's view has stopped moving for 100 ms.
// A refresh that fails (the server busy, a dropped connection) is tried
// again a second later, so that the table never stays behind the run.
let refreshTimer = null;
function refreshResults(delay = 100) {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(async () => {
    let res;
    try {
      res = await fetch(`/runs/${id}/results`);
    } catch {
      refreshResults(1000);
      return;
    }
    if (!res.ok) {
      if (res.status !== 404) refreshResults(1000);
      return;
    }
    document.getElementById("results").outerHTML = await res.text();
    paintSwatches();
  }, delay);
}

function queueText(view) {
  if (view.series && view.series.index > 0 && !view.queue_position) {
    return `Run ${view.series.index + 1} of ${view.series.runs.length} of a series: it joins the queue when the run before it ends`;
  }
  return view.queue_position === 1 ? "Waiting in the queue: you are next" : `Waiting in the queue: position ${view.queue_position || "…"}`;
}

function onRun(view) {
  const first = run === null;
  run = view;
  stateEl.textContent = view.state;
  stateEl.className = `state ${view.state}`;
  errorEl.textContent = view.error || "";
  if (queueEl) {
    queueEl.hidden = view.state !== "queued";
    queueEl.textContent = view.state === "queued" ? queueText(view) : "";
  }
  if (stopButton) stopButton.disabled = view.ended;
  if (first) charts = createCharts(chartsEl, id, () => run);
  else charts.redraw(); // markers of new changes
  showControls(view);
  showSteps(view);
  refreshResults();
}

document.querySelectorAll("[data-zoom]").forEach((b) => {
  b.addEventListener("click", () => { if (charts) charts.zoomTo(b.dataset.zoom); });
});

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
const embedCode = document.getElementById("embed-code");
if (embedCode) {
  embedCode.dataset.copy = `<iframe src="${location.origin}/embed/runs/${id}" title="A Limit Lab run" style="width:100%;height:900px;border:0" loading="lazy"></iframe>`;
}

enableCopyButtons();
enableStepChanges(id, () => run);
paintSwatches();
follow(id, {
  onRun,
  onSamples: (samples) => { if (charts) charts.add(samples); },
  onHost: (h) => { if (charts) charts.addHost(h); },
  onRestart: () => { run = null; },
  ended: () => run && run.ended,
});
