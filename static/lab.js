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
  const res = await send("/api/runs", { body: { lab: root.dataset.labId } });
  button.disabled = false;
  if (res.ok) {
    location.href = `/runs/${res.body.id}`;
    return;
  }
  listErrors(errors, res.errors);
});

enableCopyButtons();
