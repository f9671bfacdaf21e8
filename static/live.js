// /live follows the featured run: the server says which run it is on
// connect and whenever the presenter features another, and the page swaps
// the run in place.
const frame = document.getElementById("live-frame");
const status = document.getElementById("live-status");
const fork = document.getElementById("live-fork");
let current = "";

function show(id) {
  if (!id || id === current) return;
  current = id;
  frame.src = `/runs/${encodeURIComponent(id)}?embed=1`;
  frame.hidden = false;
  frame.dataset.runId = id;
  fork.href = `/?from=${encodeURIComponent(id)}`;
  fork.hidden = false;
  status.textContent = "Following the presenter's featured run.";
}

function connect() {
  const proto = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${proto}://${location.host}/api/featured/live`);
  ws.onmessage = (ev) => {
    const msg = JSON.parse(ev.data);
    if (msg.type === "featured") show(msg.id);
  };
  ws.onclose = () => setTimeout(connect, 1000);
}
connect();
