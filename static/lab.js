// A lab's page: run the lab as defined, or with the limits of the link
// that opened it (its spec in #lab-spec). In another site's frame
// (/embed/labs/...) the run opens in a new tab.
import { paintSwatches } from "./colours.js";
import { enableCopyButtons } from "./copy.js";
import { send, listErrors } from "./post.js";

const root = document.getElementById("lab");
const errors = document.getElementById("run-errors");
const button = document.getElementById("run-lab");
const linked = document.getElementById("lab-spec");
const embedded = root.dataset.embed === "1";

paintSwatches();

button.addEventListener("click", async () => {
  button.disabled = true;
  errors.replaceChildren();
  const repeatEl = document.getElementById("repeat");
  const repeat = (repeatEl && Number(repeatEl.value)) || 1;
  let body = repeat > 1 ? { lab: root.dataset.labId, repeat } : { lab: root.dataset.labId };
  if (linked) body = { ...JSON.parse(linked.textContent), ...(repeat > 1 ? { repeat } : {}) };
  const res = await send("/api/runs", { body });
  button.disabled = false;
  if (res.ok && embedded) {
    const link = document.getElementById("run-opened");
    link.href = `/runs/${res.body.id}`;
    link.hidden = false;
    window.open(link.href, "_blank", "noopener");
    return;
  }
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
