// Shared pieces of the console: DOM building, the API client, forms that keep their values and
// show errors beside the field, confirmations, copy buttons, tables. Plain ES modules, no
// dependencies: the console loads only its own files.

export const view = () => document.getElementById("view");

export function h(tag, attrs = {}, ...children) {
  const svg = ["svg", "rect", "line", "text", "g", "title", "polyline", "path"].includes(tag);
  const el = svg ? document.createElementNS("http://www.w3.org/2000/svg", tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "value" && !svg) el.value = v ?? "";
    else if (k === "checked" || k === "disabled" || k === "selected") el[k] = !!v;
    else if (v !== false && v != null) el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function render(...nodes) {
  view().replaceChildren(...nodes.flat(Infinity).filter(n => n !== null && n !== undefined && n !== false));
  const heading = view().querySelector("h2");
  if (heading) { heading.setAttribute("tabindex", "-1"); heading.focus({ preventScroll: true }); }
}

export function toast(text) {
  const t = document.getElementById("toast");
  t.textContent = text; t.hidden = false;
  clearTimeout(toast.timer); toast.timer = setTimeout(() => (t.hidden = true), 4000);
}

export class ApiError extends Error {
  constructor(status, detail, fields = {}) { super(detail); this.status = status; this.fields = fields; }
}

// Session hooks, set by app.js: what to show when the session has ended or needs a new password,
// and the sign-in screen with a notice (after a page ended the session itself).
export const session = { onUnauthorized: () => {}, onPasswordChange: () => {}, onSignedOut: () => {} };

function explain(status, data) {
  let detail = data && data.detail;
  const fields = {};
  if (Array.isArray(detail)) {
    detail = detail.map(d => {
      const loc = (d.loc || []).filter(p => p !== "body" && p !== "query" && p !== "path");
      const name = loc.join(".");
      const msg = (d.msg || "").replace(/^Value error, /, "");
      if (loc.length) fields[String(loc[0])] = fields[String(loc[0])] ? `${fields[String(loc[0])]}; ${msg}` : msg;
      return name ? `${name}: ${msg}` : msg;
    }).join("; ");
  }
  if (!detail) detail = status >= 500 ? "The service could not complete this request. Try again in a moment." : `Request failed (${status})`;
  return new ApiError(status, detail, fields);
}

function handleAuth(path, err) {
  if (err.status === 401 && !path.startsWith("/auth/")) session.onUnauthorized(err);
  if (err.status === 403 && err.message === "Password change required") session.onPasswordChange();
}

export async function api(method, path, body) {
  const opts = { method, credentials: "same-origin", headers: {} };
  if (body instanceof FormData) opts.body = body;
  else if (body !== undefined) { opts.body = JSON.stringify(body); opts.headers["Content-Type"] = "application/json"; }
  let res;
  try { res = await fetch(path, opts); }
  catch { throw new ApiError(0, "The service cannot be reached. Check your connection and try again."); }
  const data = res.status === 204 ? null : await res.json().catch(() => null);
  if (!res.ok) { const err = explain(res.status, data); handleAuth(path, err); throw err; }
  return data;
}

// An upload with progress (fetch has no upload progress): resolves with the JSON answer.
export function upload(path, formData, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", path);
    xhr.withCredentials = true;
    xhr.upload.onprogress = (e) => { if (e.lengthComputable) onProgress(e.loaded / e.total); };
    xhr.onerror = () => reject(new ApiError(0, "The service cannot be reached. Check your connection and try again."));
    xhr.onload = () => {
      let data = null;
      try { data = JSON.parse(xhr.responseText); } catch { /* not JSON */ }
      if (xhr.status >= 200 && xhr.status < 300) resolve(data);
      else { const err = explain(xhr.status, data); handleAuth(path, err); reject(err); }
    };
    xhr.send(formData);
  });
}

// An engine's slug, as the API accepts it. Browsers compile `pattern` with the v flag, where a
// bare "-" in a class is invalid (and the whole check silently skipped): it is escaped.
export const SLUG_PATTERN = "[a-z0-9\\-]+";
export const SLUG_RULE = "Use lower-case letters, digits and hyphens only (for example loan-quote).";

let ids = 0;
export const uid = (p = "f") => `${p}-${++ids}`;

// A labelled input; the error line under it is filled from the browser's checks and the API's
// per-field errors. ``patternMessage`` says in words what ``pattern`` wants.
export function field(label, name, { type = "text", value, required = true, hint, patternMessage, ...extra } = {}) {
  const id = uid(name);
  const errId = `${id}-err`;
  const input = type === "textarea"
    ? h("textarea", { id, name, required, "aria-describedby": errId, ...extra }, value ?? "")
    : h("input", { id, name, type, required, value, "aria-describedby": errId, "data-pattern-message": patternMessage, ...extra });
  return h("div", { class: "field", "data-field": name },
    h("label", { for: id }, label), input,
    hint ? h("small", { class: "hint" }, hint) : null,
    h("small", { class: "field-error", id: errId, role: "alert" }));
}

export function checkbox(label, name, checked) {
  const id = uid(name);
  return h("div", { class: "field check" }, h("input", { id, name, type: "checkbox", checked }), h("label", { for: id }, label));
}

// A form that keeps what was typed when the request fails and shows each error once: beside the
// field it is about, or under the button when it is about no field. The browser's own checks
// (required, pattern, min, max) run first and are shown the same way, beside their field.
// ``clears``: boxes that show an earlier success, emptied when the form is sent again.
export function form(fields, submitLabel, onSubmit, { id, clears = [] } = {}) {
  const err = h("p", { class: "error form-error", role: "alert" });
  const button = h("button", { type: "submit" }, submitLabel);
  const f = h("form", { id, novalidate: true }, fields, h("div", { class: "actions" }, button), err);
  f.addEventListener("submit", async (e) => {
    e.preventDefault();
    clearErrors(f, err);
    for (const box of clears) box.replaceChildren();
    const invalid = [...f.elements].filter(el => el.willValidate && !el.checkValidity());
    if (invalid.length) { showError(f, err, { fields: Object.fromEntries(invalid.map(el => [fieldName(el), problem(el)])) }); return; }
    button.disabled = true; button.classList.add("busy"); f.setAttribute("aria-busy", "true");
    try { await onSubmit(new FormData(f), f); }
    catch (x) { showError(f, err, x); }
    finally { button.disabled = false; button.classList.remove("busy"); f.removeAttribute("aria-busy"); }
  });
  return f;
}

const fieldName = (el) => (el.closest("[data-field]") || el).getAttribute("data-field") || el.name;
const problem = (el) => (el.validity.patternMismatch && el.dataset.patternMessage) || el.validationMessage;

export function clearErrors(f, line) {
  if (line) line.textContent = "";
  f.querySelectorAll(".field-error").forEach(x => (x.textContent = ""));
  f.querySelectorAll("[aria-invalid]").forEach(x => x.removeAttribute("aria-invalid"));
}

// Each field's error beside it (the first such field gets the focus); the message under the
// button only for what no field of the form explains.
export function showError(f, line, x) {
  let placed = false, unplaced = false;
  for (const [name, msg] of Object.entries((x && x.fields) || {})) {
    const box = f.querySelector(`[data-field="${CSS.escape(name)}"]`);
    if (!box) { unplaced = true; continue; }
    const input = box.querySelector("input, textarea, select");
    const worded = input && input.dataset.patternMessage && /should match pattern/.test(msg) ? input.dataset.patternMessage : msg;
    box.querySelector(".field-error").textContent = worded;
    if (input) { input.setAttribute("aria-invalid", "true"); if (!placed) input.focus(); }
    placed = true;
  }
  line.textContent = x && (unplaced || !placed) ? x.message || "" : "";
}

// A button that runs an action, shows it is busy, and reports failure in plain words.
export function action(label, run, { cls = "secondary", confirmText, confirmLabel = "Delete", id, ariaLabel } = {}) {
  const b = h("button", { type: "button", class: cls, id, "aria-label": ariaLabel });
  b.textContent = label;
  b.addEventListener("click", async () => {
    if (confirmText && !(await confirmDialog(confirmText, confirmLabel))) return;
    b.disabled = true; b.classList.add("busy");
    const line = b.nextElementSibling;
    if (line && line.classList.contains("inline-error")) line.textContent = "";
    try { await run(); }
    catch (x) {
      // Beside the button; a button the page has since replaced reports in the toast (a session
      // that ended has the sign-in screen say so instead).
      const signedOut = x.status === 401 || (x.status === 403 && x.message === "Password change required");
      if (b.isConnected) alertNear(b, x.message); else if (!signedOut) toast(x.message);
    }
    finally { b.disabled = false; b.classList.remove("busy"); }
  });
  return b;
}

function alertNear(el, text) {
  let line = el.nextElementSibling;
  if (!line || !line.classList.contains("inline-error")) {
    line = h("span", { class: "inline-error error", role: "alert" });
    el.after(line);
  }
  line.textContent = text;
}

export function confirmDialog(text, confirmLabel = "Delete") {
  return new Promise((resolve) => {
    const dlg = h("dialog", { class: "confirm", "aria-labelledby": "confirm-text" },
      h("p", { id: "confirm-text" }, text),
      h("div", { class: "actions" },
        h("button", { type: "button", class: "secondary", onclick: () => { dlg.close(); resolve(false); } }, "Cancel"),
        h("button", { type: "button", class: "danger", onclick: () => { dlg.close(); resolve(true); } }, confirmLabel)));
    dlg.addEventListener("close", () => { dlg.remove(); resolve(false); });
    document.body.append(dlg);
    dlg.showModal();
  });
}

// A form in a modal dialog: Cancel (or Escape) closes it, and so does a successful submit; a
// failure keeps it open with the error beside its field.
export function formDialog(title, fields, submitLabel, onSubmit, { id } = {}) {
  const titleId = uid("dialog-title");
  const dlg = h("dialog", { class: "confirm", "aria-labelledby": titleId });
  const f = form(fields, submitLabel, async (d, el) => { await onSubmit(d, el); dlg.close(); }, { id });
  f.querySelector(".actions").append(h("button", { type: "button", class: "secondary", onclick: () => dlg.close() }, "Cancel"));
  dlg.append(h("h3", { id: titleId }, title), f);
  dlg.addEventListener("close", () => dlg.remove());
  document.body.append(dlg);
  dlg.showModal();
  return dlg;
}

export function copyButton(text, label = "Copy") {
  return h("button", { type: "button", class: "secondary copy", onclick: async (e) => {
    const b = e.currentTarget;
    try { await navigator.clipboard.writeText(text); b.textContent = "Copied"; }
    catch { b.textContent = "Select and copy by hand"; }
    setTimeout(() => (b.textContent = label), 2000);
  } }, label);
}

// A secret shown once: the value, a copy button, and the warning.
export function secretOnce(id, title, value, what) {
  return h("section", { id, class: "once" }, h("h3", {}, title),
    h("p", { class: "warning" }, `Copy ${what} now: it will not be shown again.`),
    h("div", { class: "secret-row" }, h("code", { class: "secret" }, value), copyButton(value)));
}

// A table whose columns sort when their header is clicked. columns: [{label, key, render?, num?}]
export function sortableTable(id, columns, rows, { empty = "Nothing yet." } = {}) {
  if (!rows.length) return h("p", { class: "empty" }, empty);
  let sortKey = null, asc = true;
  const tbody = h("tbody");
  const fill = () => {
    const sorted = sortKey === null ? rows : [...rows].sort((a, b) => {
      const x = a[sortKey], y = b[sortKey];
      const r = (x === null || x === undefined) ? -1 : (y === null || y === undefined) ? 1 : typeof x === "number" ? x - y : String(x).localeCompare(String(y));
      return asc ? r : -r;
    });
    tbody.replaceChildren(...sorted.map(r => h("tr", {}, columns.map(c => h("td", { class: c.num ? "num" : null }, c.render ? c.render(r) : fmt(r[c.key]))))));
  };
  const heads = columns.map(c => h("th", { scope: "col", "aria-sort": "none", class: c.num ? "num" : null },
    h("button", { type: "button", class: "sort", onclick: (e) => {
      asc = sortKey === c.key ? !asc : true; sortKey = c.key;
      table.querySelectorAll("th").forEach(th => th.setAttribute("aria-sort", "none"));
      e.currentTarget.parentElement.setAttribute("aria-sort", asc ? "ascending" : "descending");
      fill();
    } }, c.label)));
  const table = h("table", { id }, h("thead", {}, h("tr", {}, heads)), tbody);
  fill();
  return h("div", { class: "table-wrap" }, table);
}

export function table(id, headers, rows, { empty = "Nothing yet." } = {}) {
  if (!rows.length) return h("p", { class: "empty" }, empty);
  return h("div", { class: "table-wrap" }, h("table", { id },
    h("thead", {}, h("tr", {}, headers.map(x => h("th", { scope: "col" }, x)))),
    h("tbody", {}, rows)));
}

export function fmt(v) {
  if (v === null || v === undefined) return "—";
  if (typeof v === "number") return Number.isInteger(v) ? v.toLocaleString("en") : v.toLocaleString("en", { maximumFractionDigits: 2 });
  return String(v);
}

export function when(iso) {
  if (!iso) return "never";
  const d = new Date(iso);
  return d.toISOString().replace("T", " ").slice(0, 16) + " UTC";
}

// How long ago, in words ("3 minutes ago", "yesterday"), the exact time (UTC) on hover and
// for assistive technology in the <time> element's title and datetime.
export function ago(iso, now = Date.now()) {
  if (!iso) return "never";
  let seconds = Math.round((new Date(iso).getTime() - now) / 1000);
  if (seconds > 0 && seconds < 300) seconds = 0; // the browser's clock a little behind the service's

  const words = new Intl.RelativeTimeFormat("en", { numeric: "auto" });
  const units = [["year", 31536000], ["month", 2592000], ["week", 604800], ["day", 86400], ["hour", 3600], ["minute", 60]];
  const [unit, size] = units.find(([, s]) => Math.abs(seconds) >= s) || ["second", 1];
  const text = unit === "second" && Math.abs(seconds) < 45 ? "just now" : words.format(Math.round(seconds / size), unit);
  return h("time", { datetime: iso, title: when(iso) }, text);
}

// A value in its shape: a table for a list or a block of cells, the value itself otherwise.
export function shaped(value) {
  if (Array.isArray(value)) {
    const rows = Array.isArray(value[0]) ? value : [value];
    return h("div", { class: "table-wrap" }, h("table", { class: "grid out" }, rows.map(r => h("tr", {}, (Array.isArray(r) ? r : [r]).map(c => h("td", { class: "num" }, fmt(c)))))));
  }
  return h("output", {}, fmt(value));
}

// Named values (a job's inputs or outputs) in their shapes, with their raw JSON a click away.
export function namedValues(id, values) {
  return [h("dl", { class: "outputs", id }, Object.entries(values || {}).map(([k, x]) => [h("dt", {}, k), h("dd", { "data-output": k }, shaped(x))])),
    h("details", { class: "raw" }, h("summary", {}, "Raw JSON"), h("pre", { class: "json" }, JSON.stringify(values, null, 2)))];
}

export const loading = (what = "Loading…") => h("p", { class: "loading", role: "status" }, what);

export function section(title, ...children) {
  return h("section", {}, h("h2", {}, title), children);
}

export function breadcrumbs(...items) {
  return h("nav", { class: "crumbs", "aria-label": "Breadcrumb" },
    items.map((it, i) => [i ? " / " : "", it.href ? h("a", { href: it.href }, it.label) : h("span", { "aria-current": "page" }, it.label)]));
}

export function isoDay(d) { return d.toISOString().slice(0, 10); }
