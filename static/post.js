// One way to call the JSON API and read its reply. Every API error has one
// shape, whatever its status: {errors: [{lane, field, message}], quota?}.
// What is not the API's (a proxy's page, no reply at all) becomes one
// error of that shape. Nothing is thrown: every failure comes back as
// errors to show.

// send calls url and resolves to {ok, status, body, errors}. body may be
// an object (sent as JSON) or a string (sent as it is).
export async function send(url, { method = "POST", body, headers = {} } = {}) {
  const init = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = typeof body === "string" ? body : JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(url, init);
  } catch (err) {
    return { ok: false, status: 0, body: null,
      errors: [{ lane: -1, field: "network", message: `no reply from the server (${err.message || err})` }] };
  }
  const text = await res.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (res.ok && parsed !== null) return { ok: true, status: res.status, body: parsed, errors: [] };
  const errors = parsed && Array.isArray(parsed.errors) ? parsed.errors
    : [{ lane: -1, field: "server", message: `${res.status} ${res.statusText}: ${text.slice(0, 200) || "no reply body"}` }];
  return { ok: false, status: res.status, body: parsed, errors };
}

// errorText is one error in a line, naming the lane (counted from 1) and
// the field.
export function errorText(e) {
  return e.lane >= 0 ? `lane ${e.lane + 1} · ${e.field}: ${e.message}` : `${e.field}: ${e.message}`;
}

// listErrors shows errors as the items of a list element.
export function listErrors(list, errors) {
  list.replaceChildren(...errors.map((e) => {
    const li = document.createElement("li");
    li.textContent = errorText(e);
    return li;
  }));
}
