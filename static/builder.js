// The experiment builder: lanes as form fields, a spec as JSON, errors
// shown beside the field they name.
import { laneColour } from "./colours.js";
import { send, errorText } from "./post.js";

const form = document.getElementById("builder");
const lanesEl = document.getElementById("lanes");
const template = document.getElementById("lane-template");
const runErrors = document.getElementById("run-errors");
const labs = JSON.parse(document.getElementById("labs-data").textContent || "[]");

function get(obj, path) {
  return path.split(".").reduce((o, k) => (o == null ? undefined : o[k]), obj);
}

function showKind(fs) {
  const kind = fs.querySelector('[data-field="workload.kind"]').value;
  fs.querySelectorAll("[data-kinds]").forEach((el) => {
    el.classList.toggle("hidden", !el.dataset.kinds.split(" ").includes(kind));
  });
}

function renumber() {
  lanesEl.querySelectorAll("fieldset.lane").forEach((fs, i) => {
    fs.querySelector(".lane-no").textContent = i + 1;
    fs.style.setProperty("--lane-colour", laneColour(i));
    fs.dataset.lane = i;
  });
}

function addLane(lane = { workload: { kind: "md5" } }) {
  const fs = template.content.firstElementChild.cloneNode(true);
  fs.querySelectorAll("[data-field]").forEach((input) => {
    const f = input.dataset.field;
    const top = f.startsWith("workload.") || f === "name" || f === "start_at" || f === "stop_at";
    const v = top ? get(lane, f) : get(lane.limits || {}, f);
    if (v !== undefined && v !== null) input.value = v;
  });
  // Only the groups of limits the lane uses are open.
  fs.querySelectorAll("details.limits").forEach((d) => {
    d.open = [...d.querySelectorAll("[data-field]")].some((input) => input.value !== "");
  });
  fs.querySelector('[data-field="workload.kind"]').addEventListener("change", () => showKind(fs));
  fs.querySelector(".remove-lane").addEventListener("click", () => { fs.remove(); renumber(); });
  lanesEl.appendChild(fs);
  showKind(fs);
  renumber();
}

function load(spec) {
  form.elements.name.value = spec.name || "";
  form.elements.mode.value = spec.mode || "parallel";
  form.elements.duration.value = spec.duration || "60s";
  form.elements.repeat.value = spec.repeat || 1;
  form.elements.interval.value = spec.interval || "";
  lanesEl.replaceChildren();
  (spec.lanes || []).forEach(addLane);
  clearErrors();
}

function readSpec() {
  const spec = {
    name: form.elements.name.value,
    mode: form.elements.mode.value,
    duration: form.elements.duration.value,
    lanes: [],
  };
  if (form.elements.interval.value.trim() !== "") spec.interval = form.elements.interval.value.trim();
  const repeat = Number(form.elements.repeat.value);
  if (repeat !== 1) spec.repeat = Number.isFinite(repeat) ? repeat : form.elements.repeat.value;
  lanesEl.querySelectorAll("fieldset.lane").forEach((fs) => {
    const lane = { name: "", workload: {}, limits: {} };
    const kind = fs.querySelector('[data-field="workload.kind"]').value;
    fs.querySelectorAll("[data-field]").forEach((input) => {
      const f = input.dataset.field;
      const v = input.value.trim();
      if (v === "") return;
      const holder = input.closest("[data-kinds]");
      if (holder && !holder.dataset.kinds.split(" ").includes(kind)) return;
      if (f === "name" || f === "start_at" || f === "stop_at") lane[f] = v;
      else if (f.startsWith("workload.")) lane.workload[f.slice(9)] = input.type === "number" ? Number(v) : v; // the page marks the numbers
      else lane.limits[f] = v;
    });
    spec.lanes.push(lane);
  });
  return spec;
}

function clearErrors() {
  runErrors.replaceChildren();
  form.querySelectorAll(".invalid").forEach((el) => el.classList.remove("invalid"));
  form.querySelectorAll(".field-error").forEach((el) => el.remove());
}

function showErrors(errors) {
  clearErrors();
  for (const e of errors) {
    const li = document.createElement("li");
    li.textContent = errorText(e);
    runErrors.appendChild(li);
    const scope = e.lane >= 0 ? lanesEl.querySelector(`fieldset.lane[data-lane="${e.lane}"]`) : form.querySelector(".row");
    const input = scope && scope.querySelector(`[data-field="${CSS.escape(e.field)}"]`);
    if (input) {
      const group = input.closest("details");
      if (group) group.open = true;
      input.classList.add("invalid");
      const msg = document.createElement("span");
      msg.className = "field-error";
      msg.textContent = e.message;
      input.insertAdjacentElement("afterend", msg);
    }
  }
}

form.addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const button = document.getElementById("run");
  button.disabled = true;
  const res = await send("/api/runs", { body: readSpec() });
  button.disabled = false;
  if (res.ok) {
    location.href = `/runs/${res.body.id}`;
    return;
  }
  showErrors(res.errors);
});

document.getElementById("add-lane").addEventListener("click", () => addLane());
document.querySelectorAll("button[data-lab]").forEach((b) => {
  b.addEventListener("click", () => {
    const lab = labs.find((l) => l.id === b.dataset.lab);
    if (lab) load(lab.spec);
  });
});

// ?from=<run id> opens an earlier run's spec; ?lab=<id> a lab's.
const params = new URLSearchParams(location.search);
if (params.get("from")) {
  fetch(`/api/runs/${encodeURIComponent(params.get("from"))}`)
    .then((r) => (r.ok ? r.json() : Promise.reject(r.statusText)))
    .then((run) => load(run.spec))
    .catch(() => load(labs[0].spec));
} else {
  load((labs.find((l) => l.id === params.get("lab")) || labs[0]).spec);
}
