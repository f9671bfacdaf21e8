// Find the limit: the form that starts a search, and a search's page,
// whose chart and probes the server renders again as each probe ends.
import { send, errorText } from "./post.js";

const form = document.getElementById("find-form");
if (form) {
  const errors = document.getElementById("find-errors");
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const f = form.elements;
    const num = (name) => Number(f[name].value);
    const body = {
      service: { kind: "http", work_us: num("work_us"), gomaxprocs: f.gomaxprocs.value.trim() },
      load: { rate: num("rate"), seconds: num("seconds") },
      target: { p99_ms: num("p99_ms"), errors_pct: num("errors_pct"), throttled: num("throttled") },
      search: { limit: f.limit.value, min: f.min.value.trim(), max: f.max.value.trim(), resolution: f.resolution.value.trim(), repeats: num("repeats") },
    };
    if (f.then_limit.value) {
      body.then = { limit: f.then_limit.value, min: f.then_min.value.trim(), max: f.then_max.value.trim(),
        resolution: f.then_resolution.value.trim(), repeats: num("repeats") };
    }
    const res = await send("/api/find", { body });
    if (res.ok) {
      location.href = `/find/${res.body.id}`;
      return;
    }
    errors.replaceChildren(...res.errors.map((e) => {
      const li = document.createElement("li");
      li.textContent = errorText(e);
      return li;
    }));
  });
}

const page = document.getElementById("find");
if (page) {
  const id = page.dataset.findId;
  const stop = document.getElementById("find-stop");
  const live = () => document.getElementById("find-live");
  stop.disabled = live().dataset.state !== "running";
  stop.addEventListener("click", async () => {
    stop.disabled = true;
    await send(`/api/find/${id}/stop`);
  });
  // While the search runs, its live part is fetched again every second.
  const follow = async () => {
    if (live().dataset.state !== "running") {
      stop.disabled = true;
      return;
    }
    try {
      const res = await fetch(`/find/${id}/live`);
      if (res.ok) live().outerHTML = await res.text();
    } catch {
      // the next look tries again
    }
    setTimeout(follow, 1000);
  };
  setTimeout(follow, 1000);
}
