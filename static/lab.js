// A lab's page: run the lab as defined.
import { laneColour } from "./colours.js";
import { enableCopyButtons } from "./copy.js";

const root = document.getElementById("lab");
const errors = document.getElementById("run-errors");
const button = document.getElementById("run-lab");

document.querySelectorAll(".swatch[data-lane-index]").forEach((el) => {
  el.style.background = laneColour(Number(el.dataset.laneIndex));
});

button.addEventListener("click", async () => {
  button.disabled = true;
  errors.replaceChildren();
  try {
    const res = await fetch("/api/runs", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ lab: root.dataset.labId }),
    });
    const body = await res.json();
    if (res.status === 201) {
      location.href = `/runs/${body.id}`;
      return;
    }
    for (const e of body.errors || [{ field: "server", message: body.error || res.statusText }]) {
      const li = document.createElement("li");
      li.textContent = `${e.field}: ${e.message}`;
      errors.appendChild(li);
    }
  } finally {
    button.disabled = false;
  }
});

enableCopyButtons();
