// The history page's import: a run exported elsewhere, uploaded as is.
const input = document.getElementById("import-file");
const error = document.getElementById("import-error");

input.addEventListener("change", async () => {
  const file = input.files[0];
  if (!file) return;
  error.textContent = "Importing…";
  const res = await fetch("/api/runs/import", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: await file.text(),
  });
  const body = await res.json().catch(() => ({}));
  if (res.status === 201) {
    location.href = `/runs/${body.id}`;
    return;
  }
  error.textContent = body.error || res.statusText;
});
