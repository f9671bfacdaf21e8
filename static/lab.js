// A lab's page: run the lab as defined.
import { paintSwatches } from "./colours.js";
import { enableCopyButtons } from "./copy.js";
import { send, listErrors } from "./post.js";

const root = document.getElementById("lab");
const errors = document.getElementById("run-errors");
const button = document.getElementById("run-lab");

paintSwatches();

button.addEventListener("click", async () => {
  button.disabled = true;
  errors.replaceChildren();
  const repeat = Number(document.getElementById("repeat").value) || 1;
  const res = await send("/api/runs", { body: repeat > 1 ? { lab: root.dataset.labId, repeat } : { lab: root.dataset.labId } });
  button.disabled = false;
  if (res.ok) {
    location.href = `/runs/${res.body.id}`;
    return;
  }
  listErrors(errors, res.errors);
});

// A lab that is a search runs as one: its probes, one run each.
const search = document.getElementById("run-search");
if (search) {
  search.addEventListener("click", async () => {
    search.disabled = true;
    errors.replaceChildren();
    const res = await send("/api/find", { body: { lab: root.dataset.labId } });
    search.disabled = false;
    if (res.ok) {
      location.href = `/find/${res.body.id}`;
      return;
    }
    listErrors(errors, res.errors);
  });
}

enableCopyButtons();
