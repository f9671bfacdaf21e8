// One colour per lane, the same on every chart, table and form.
export const laneColours = [
  "#2458d6", "#d6482f", "#1f9a4a", "#9a3fc0", "#d08a00", "#0a8fa0",
  "#c2397a", "#5d6b00", "#6b4e2e", "#3f3f9a", "#8a8a8a", "#00a37a",
];

export function laneColour(i) {
  return laneColours[i % laneColours.length];
}

// paintSwatches colours every lane swatch (.swatch[data-lane-index]) under
// root.
export function paintSwatches(root = document) {
  root.querySelectorAll(".swatch[data-lane-index]").forEach((el) => {
    el.style.background = laneColour(Number(el.dataset.laneIndex));
  });
  root.querySelectorAll("[data-lane-fill]").forEach((el) => {
    el.style.fill = laneColour(Number(el.dataset.laneFill));
  });
}
