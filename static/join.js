// The join form: a workshop's code, entered once; the server keeps the
// proof in a cookie.
import { send, errorText } from "./post.js";

const form = document.getElementById("join");
const error = document.getElementById("join-error");

form.addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const res = await send("/api/join", { body: { code: form.elements.code.value.trim(), name: form.elements.name.value } });
  if (res.ok) {
    form.remove();
    return;
  }
  error.textContent = res.errors.map(errorText).join("; ");
});
