// Copy buttons: any button with data-copy puts its text on the clipboard.
export function enableCopyButtons() {
  document.addEventListener("click", (ev) => {
    const b = ev.target.closest("button[data-copy]");
    if (!b) return;
    const was = b.textContent;
    navigator.clipboard.writeText(b.dataset.copy).then(() => {
      b.textContent = "Copied";
      setTimeout(() => (b.textContent = was), 1200);
    });
  });
}
