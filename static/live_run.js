// A run's websocket: the run's history on connect, then each message as it
// comes. A viewer dropped for falling behind (1008), or cut off before the
// run ended, connects again and gets the history anew.
export function follow(runID, { onRun, onSamples, onHost, onRestart, ended }) {
  const proto = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${proto}://${location.host}/api/runs/${runID}/live`);
  ws.onmessage = (ev) => {
    const msg = JSON.parse(ev.data);
    if (msg.type === "run") onRun(msg.run);
    else if (msg.type === "samples") onSamples(msg.samples);
    else if (msg.type === "host") onHost(msg.host);
  };
  ws.onclose = (ev) => {
    if (ev.code === 1008 || (ev.code !== 1000 && !ended())) {
      onRestart();
      setTimeout(() => follow(runID, { onRun, onSamples, onHost, onRestart, ended }), 1000);
    }
  };
}
