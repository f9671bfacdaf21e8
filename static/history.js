// The history page's import: a run exported elsewhere, uploaded as is.
import { send, errorText } from "./post.js";

const input = document.getElementById("import-file");
const error = document.getElementById("import-error");

input.addEventListener("change", async () => {
  const file = input.files[0];
  if (!file) return;
  error.textContent = "Importing…";
  const res = await send("/api/runs/import", { body: await file.text() });
  if (res.ok) {
    location.href = `/runs/${res.body.id}`;
    return;
  }
  error.textContent = res.errors.map(errorText).join("; ");
});
