// The presenter's page: the token stays in this tab's session storage and
// is sent only as a bearer header on the presenter's calls.
import { send, errorText } from "./post.js";
const tokenInput = document.getElementById("token");
const tokenStatus = document.getElementById("token-status");
const list = document.getElementById("presenter-runs");
let token = sessionStorage.getItem("limitlab-presenter") || "";

async function call(method, url) {
  const res = await send(url, { method, headers: { Authorization: `Bearer ${token}` } });
  if (!res.ok) tokenStatus.textContent = res.errors.map(errorText).join("; ");
  return res.ok ? res.body : null;
}

async function check() {
  if (!token) {
    tokenStatus.textContent = "Enter the token the server was started with.";
    return;
  }
  const body = await call("GET", "/api/presenter/check");
  if (!body) return;
  tokenStatus.textContent = "Presenter: ready.";
  const code = document.getElementById("join-code");
  code.hidden = !body.join_code;
  code.textContent = body.join_code ? `Join code for the room: ${body.join_code}` : "";
}

document.getElementById("token-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  token = tokenInput.value.trim();
  sessionStorage.setItem("limitlab-presenter", token);
  check();
});

document.getElementById("clear-queue").addEventListener("click", async () => {
  const body = await call("POST", "/api/queue/clear");
  if (body) tokenStatus.textContent = `Cleared ${body.cleared} queued runs.`;
  refresh();
});

function button(text, testid, onclick) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  b.setAttribute("data-testid", testid);
  b.addEventListener("click", onclick);
  return b;
}

async function refresh() {
  const res = await fetch("/api/runs?limit=50");
  if (!res.ok) return;
  const { runs } = await res.json();
  list.replaceChildren(...(runs || []).slice(0, 50).map((r) => {
    const tr = document.createElement("tr");
    tr.dataset.runId = r.id;
    const when = document.createElement("td");
    when.textContent = new Date(r.created_at).toLocaleTimeString();
    const name = document.createElement("td");
    const a = document.createElement("a");
    a.href = `/runs/${r.id}`;
    a.textContent = r.name;
    name.appendChild(a);
    const state = document.createElement("td");
    state.textContent = r.state === "queued" ? `queued (${r.queue_position})` : r.state;
    const actions = document.createElement("td");
    actions.appendChild(button("Feature", `feature-${r.id}`, async () => {
      if (await call("POST", `/api/runs/${r.id}/feature`)) tokenStatus.textContent = `Featured ${r.name}.`;
    }));
    if (!r.ended) {
      actions.appendChild(button("Stop", `stop-${r.id}`, async () => {
        await call("POST", `/api/runs/${r.id}/stop`);
        refresh();
      }));
    }
    tr.append(when, name, state, actions);
    return tr;
  }));
}

tokenInput.value = token;
check();
refresh();
setInterval(refresh, 3000);
