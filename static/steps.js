// A guided lab's steps on the run page: ticked as the server's checks
// hold, the hint shown while a check fails, and a button that makes a
// step's change through the same live update as the controls below.
import { send, errorText } from "./post.js";

const panel = document.getElementById("steps");

export function showSteps(view) {
  if (!panel || !view.steps) return;
  for (const s of view.steps) {
    const li = panel.querySelector(`li[data-step="${s.index}"]`);
    if (!li) continue;
    li.dataset.state = s.state;
    li.className = `step ${s.state}`;
    const value = li.querySelector("[data-value]");
    if (value) value.textContent = s.value_text || "";
    const hint = li.querySelector("[data-hint]");
    if (hint) hint.hidden = !(s.full && !s.holds) || s.state === "done";
    // A step the run ended on before it was done says why.
    const outcome = li.querySelector("[data-outcome]");
    if (outcome) {
      outcome.textContent = s.outcome || "";
      outcome.hidden = !s.outcome;
    }
    const button = li.querySelector("button.make-change");
    if (button) button.disabled = s.changed || s.state !== "active" || view.ended;
  }
}

export function enableStepChanges(runID, getView) {
  if (!panel) return;
  panel.querySelectorAll("button.make-change").forEach((button) => {
    button.addEventListener("click", async () => {
      const view = getView();
      const step = view && view.steps[Number(button.dataset.step)];
      if (!step) return;
      button.disabled = true;
      const res = await send(`/api/runs/${runID}/lanes/${step.change_lane}/limits`, { body: step.change_limits });
      if (!res.ok) {
        button.disabled = false;
        button.title = res.errors.map(errorText).join("; ");
      }
    });
  });
}
