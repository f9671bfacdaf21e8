// Live limit controls: one form per lane, shown while the lane runs, with
// the limits in force as placeholders (the flags the server sends), and
// each change sent through the API.
import { send, errorText } from "./post.js";

export function enableControls(runID) {
  const forms = document.querySelectorAll("form.lane-control");
  forms.forEach((form) => {
    form.querySelectorAll("input[data-mirror]").forEach((slider) => {
      const field = form.querySelector(`input[data-field="${slider.dataset.mirror}"]`);
      slider.addEventListener("input", () => { field.value = slider.value; });
    });
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const change = {};
      form.querySelectorAll("input[data-field]").forEach((input) => {
        if (input.value.trim() !== "") setField(change, input.dataset.field, input.value.trim());
      });
      const errs = form.querySelector("[data-errors]");
      const state = form.querySelector("[data-resize]");
      errs.textContent = "";
      state.textContent = "";
      const res = await send(`/api/runs/${runID}/lanes/${form.dataset.lane}/limits`, { body: change });
      if (res.ok) {
        form.querySelectorAll("input[data-field]").forEach((input) => { input.value = ""; });
        // A pod's resize: kubelet's word on it, unless it is done.
        const rz = res.body && res.body.resize;
        if (rz && rz.state !== "Done") state.textContent = `${rz.state}: ${rz.message}`;
        return;
      }
      errs.textContent = res.errors.map(errorText).join("; ");
    });
  });
  // show follows the run: a lane's form while it runs.
  return function show(view) {
    const section = document.getElementById("controls");
    if (!section) return;
    section.hidden = view.ended;
    forms.forEach((form) => {
      const lane = view.lanes[Number(form.dataset.lane)];
      form.hidden = !lane || lane.state !== "running" || view.ended;
      if (!lane) return;
      form.querySelectorAll("input[data-field]").forEach((input) => {
        input.placeholder = lane.flags[input.dataset.field] || "none";
      });
    });
  };
}

// setField sets a dotted field ("resources.limits.cpu") in a change,
// making the objects on its way.
function setField(change, path, value) {
  const keys = path.split(".");
  let at = change;
  keys.slice(0, -1).forEach((k) => { at = at[k] = at[k] || {}; });
  at[keys[keys.length - 1]] = value;
}
