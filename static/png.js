// A chart saved as a PNG, as drawn, with its title and lane names above it
// on white: uPlot draws the title and legend outside the canvas.
import { laneColour } from "./colours.js";

export function downloadPNG(u, title, lanes, file) {
  const src = u.ctx.canvas;
  const dpr = devicePixelRatio || 1;
  const head = Math.round(44 * dpr);
  const out = document.createElement("canvas");
  out.width = src.width;
  out.height = src.height + head;
  const ctx = out.getContext("2d");
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, out.width, out.height);
  ctx.fillStyle = "#1d2430";
  ctx.font = `${Math.round(13 * dpr)}px sans-serif`;
  ctx.fillText(title, 8 * dpr, 16 * dpr);
  let x = 8 * dpr;
  lanes.forEach((l, i) => {
    ctx.fillStyle = laneColour(i);
    ctx.fillText(`■ ${l.name}`, x, 36 * dpr);
    x += ctx.measureText(`■ ${l.name}`).width + 14 * dpr;
  });
  ctx.drawImage(src, 0, head);
  out.toBlob((blob) => {
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = file;
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  }, "image/png");
}
