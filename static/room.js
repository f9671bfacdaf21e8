// The presenter's view of the room: every participant, their latest run
// and the guided step each has reached, live over a websocket. A browser
// cannot set a websocket's headers, so the token is its first message.
const body = document.getElementById("room");
const status = document.getElementById("room-status");
const tokenInput = document.getElementById("token");
const door = document.getElementById("room-door");
let open = true;
let socket = null;
let retry = null;

function token() {
  return tokenInput.value.trim() || sessionStorage.getItem("limitlab-presenter") || "";
}

function cell(text, testid) {
  const td = document.createElement("td");
  td.textContent = text;
  if (testid) td.dataset.testid = testid;
  return td;
}

// stepText is a row's guided step in words: "2 of 4: <prompt>".
function stepText(p) {
  if (!p.steps) return "";
  const all = p.steps_done === p.steps ? " (all done)" : "";
  return `${p.step} of ${p.steps}${all}: ${p.step_prompt || ""}`;
}

// checkText says whether the reached step's check holds, with its value.
function checkText(p) {
  if (!p.steps) return "";
  if (p.steps_done === p.steps) return "done";
  return `${p.holds ? "holds" : "not yet"} ${p.value || ""}`.trim();
}

function row(p) {
  const tr = document.createElement("tr");
  tr.dataset.testid = "room-row";
  tr.dataset.participant = p.label;
  tr.dataset.step = p.step || 0;
  tr.dataset.holds = p.holds ? "true" : "false";
  const run = document.createElement("td");
  if (p.run) {
    const a = document.createElement("a");
    a.href = `/runs/${p.run}`;
    a.textContent = p.run_name || p.run;
    run.appendChild(a);
  }
  const state = p.state === "queued" && p.queue_position ? `queued (${p.queue_position})` : p.state || "no run yet";
  tr.append(cell(p.named ? p.label : `${p.label} (no name)`, "room-name"), cell(new Date(p.joined).toLocaleTimeString()),
    cell(fromText(p), "room-address"), run,
    cell(state, "room-state"), cell(stepText(p), "room-step"), cell(checkText(p), "room-check"), removeCell(p));
  return tr;
}

// fromText is the address a participant joined from, with how many of
// the room's identities joined from it: many behind one address is a room
// behind a NAT, or one person making a crowd.
function fromText(p) {
  if (!p.address) return "";
  return p.identities_from_address > 1 ? `${p.address} (${p.identities_from_address} here)` : p.address;
}

// showDoor says whether the room takes newcomers, on its button.
function showDoor() {
  door.hidden = false;
  door.textContent = open ? "Close the room to new participants" : "Open the room to new participants";
  door.dataset.open = open ? "true" : "false";
}

door.addEventListener("click", async () => {
  const res = await fetch(`/api/presenter/room/${open ? "close" : "open"}`, {
    method: "POST", headers: { Authorization: `Bearer ${token()}`, "Content-Type": "application/json" },
  });
  const answer = await res.json().catch(() => ({}));
  if (!res.ok) {
    status.textContent = `The room's door: ${answer.errors?.[0]?.message || res.statusText}`;
    return;
  }
  open = answer.open;
  showDoor();
});

// removeCell is a row's Remove button: a first click asks, a second
// removes the participant for good (their queued runs end with them).
function removeCell(p) {
  const td = document.createElement("td");
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = "Remove";
  b.dataset.testid = "room-remove";
  b.addEventListener("click", async () => {
    if (b.dataset.armed !== "true") {
      b.dataset.armed = "true";
      b.textContent = `Remove ${p.label} for good?`;
      return;
    }
    b.disabled = true;
    const res = await fetch(`/api/presenter/room/${encodeURIComponent(p.ref)}/remove`, {
      method: "POST", headers: { Authorization: `Bearer ${token()}`, "Content-Type": "application/json" },
    });
    const answer = await res.json().catch(() => ({}));
    status.textContent = res.ok
      ? `Removed ${p.label}; ${answer.queued_runs_ended} queued run(s) ended.`
      : `Removing ${p.label}: ${answer.errors?.[0]?.message || res.statusText}`;
  });
  td.appendChild(b);
  return td;
}

function connect() {
  clearTimeout(retry);
  if (socket) socket.close();
  const t = token();
  if (!t) return;
  const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/api/presenter/room/live`);
  socket = ws;
  ws.addEventListener("open", () => ws.send(t));
  ws.addEventListener("message", (ev) => {
    const { participants, open: isOpen } = JSON.parse(ev.data);
    open = isOpen;
    showDoor();
    status.textContent = `${participants.length} in the room${open ? "" : "; closed to new participants"}.`;
    body.replaceChildren(...participants.map(row));
  });
  ws.addEventListener("close", (ev) => {
    if (socket !== ws) return;
    status.textContent = ev.code === 1008 ? "The room view needs the presenter token." : "The room view lost its connection; reconnecting…";
    if (ev.code !== 1008) retry = setTimeout(connect, 2000);
  });
}

document.getElementById("token-form").addEventListener("submit", () => setTimeout(connect, 0));

document.getElementById("room-csv").addEventListener("click", async () => {
  const res = await fetch("/api/presenter/room.csv", { headers: { Authorization: `Bearer ${token()}` } });
  if (!res.ok) {
    status.textContent = `The room's CSV: ${res.status} ${res.statusText}`;
    return;
  }
  const a = document.createElement("a");
  a.href = URL.createObjectURL(await res.blob());
  a.download = "limitlab-room.csv";
  a.click();
  URL.revokeObjectURL(a.href);
});

connect();
