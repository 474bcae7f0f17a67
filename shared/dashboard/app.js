// The tenant administrator's dashboard: a small client of the management API.
// The session lives in the HttpOnly auth_token cookie that /auth/login sets; no token is kept here.
"use strict";

const view = document.getElementById("view");
const nav = document.getElementById("nav");

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (v !== false && v != null) el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) el.append(c instanceof Node ? c : document.createTextNode(c ?? ""));
  return el;
}

function toast(text) {
  const t = document.getElementById("toast");
  t.textContent = text; t.hidden = false;
  clearTimeout(toast.timer); toast.timer = setTimeout(() => (t.hidden = true), 3000);
}

class ApiError extends Error {
  constructor(status, detail) { super(detail); this.status = status; }
}

async function api(method, path, body) {
  const opts = { method, credentials: "same-origin", headers: {} };
  if (body instanceof FormData) opts.body = body;
  else if (body !== undefined) { opts.body = JSON.stringify(body); opts.headers["Content-Type"] = "application/json"; }
  const res = await fetch(path, opts);
  const data = res.status === 204 ? null : await res.json().catch(() => null);
  if (!res.ok) {
    let detail = data && data.detail;
    if (Array.isArray(detail)) detail = detail.map(d => `${(d.loc || []).slice(1).join(".")}: ${d.msg}`).join("; ");
    if (res.status === 401 && !path.startsWith("/auth/")) { showLogin(); }
    if (res.status === 403 && detail === "Password change required") { showChangePassword(); }
    throw new ApiError(res.status, detail || `Request failed (${res.status})`);
  }
  return data;
}

function form(fields, submitLabel, onSubmit) {
  const err = h("p", { class: "error", role: "alert" });
  const f = h("form", {}, fields, h("button", { type: "submit" }, submitLabel), err);
  f.addEventListener("submit", async (e) => {
    e.preventDefault(); err.textContent = "";
    try { await onSubmit(new FormData(f)); } catch (x) { err.textContent = x.message; }
  });
  return f;
}

const field = (label, name, type = "text", extra = {}) =>
  h("label", {}, label, h("input", { name, type, required: extra.optional ? false : true, ...extra, optional: null }));

function render(...nodes) { view.replaceChildren(...nodes); }

function showLogin() {
  nav.hidden = true;
  render(h("section", {}, h("h2", {}, "Log in"),
    form([field("Email", "email", "email"), field("Password", "password", "password")], "Log in", async (d) => {
      const r = await api("POST", "/auth/login", { email: d.get("email"), password: d.get("password") });
      if (r.must_change_password) showChangePassword(d.get("password"));
      else { location.hash = "#/engines"; route(); }
    })));
}

function showChangePassword(current = "") {
  nav.hidden = true;
  render(h("section", {}, h("h2", {}, "Choose a new password"),
    h("p", {}, "Your password is temporary. Choose a new one (at least 8 characters) to continue."),
    form([field("Current password", "current", "password", { value: current }), field("New password", "new", "password", { minlength: 8 })],
      "Change password", async (d) => {
        await api("POST", "/auth/change-password", { current_password: d.get("current"), new_password: d.get("new") });
        toast("Password changed. Log in with your new password.");
        showLogin();
      })));
}

async function showEngines() {
  const engines = await api("GET", "/engines");
  const rows = engines.map(e => h("tr", {},
    h("td", {}, h("a", { href: `#/engines/${e.id}` }, e.name)), h("td", {}, h("code", {}, e.slug)),
    h("td", {}, e.active_version ? e.active_version.version : "none"), h("td", {}, e.description || "")));
  render(
    h("section", {}, h("h2", {}, "Engines"),
      engines.length ? h("table", { id: "engines" }, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Slug"), h("th", {}, "Active version"), h("th", {}, "Description")), rows)
        : h("p", {}, "No engines yet.")),
    h("section", {}, h("h2", {}, "New engine"),
      form([field("Name", "name"), field("Slug (optional)", "slug", "text", { optional: true, pattern: "[a-z0-9-]+" }), field("Description", "description", "text", { optional: true })],
        "Create engine", async (d) => {
          const e = await api("POST", "/engines", { name: d.get("name"), slug: d.get("slug") || null, description: d.get("description") || null });
          location.hash = `#/engines/${e.id}`;
        })));
}

async function showEngine(id) {
  const [e, consumers] = await Promise.all([api("GET", `/engines/${id}`), api("GET", "/consumers").catch(() => [])]);
  const versionRows = e.versions.map(v => h("tr", {},
    h("td", {}, v.version, " ", v.is_active ? h("span", { class: "badge" }, "active") : ""),
    h("td", {}, v.filename), h("td", {}, v.named_ranges.map(n => `${n.name} (${n.kind})`).join(", ")),
    h("td", {}, v.is_active ? "" : h("button", { class: "secondary", type: "button", onclick: async () => {
      await api("POST", `/engines/${id}/versions/${v.id}/activate`); toast(`Version ${v.version} is active`); showEngine(id);
    } }, "Activate"))));
  const accessRows = e.consumers.map(c => h("tr", {}, h("td", {}, c.consumer_name),
    ...["can_execute", "can_view_jobs", "can_download", "can_view_about"].map(f => h("td", {}, c[f] ? "yes" : "no"))));
  const uploadResult = h("div");
  render(
    h("section", {}, h("h2", {}, e.name), h("p", {}, "Slug ", h("code", {}, e.slug), e.description ? ` · ${e.description}` : "")),
    h("section", {}, h("h2", {}, "Versions"),
      e.versions.length ? h("table", { id: "versions" }, h("tr", {}, h("th", {}, "Version"), h("th", {}, "File"), h("th", {}, "Named ranges"), h("th", {})), versionRows) : h("p", {}, "No versions yet."),
      h("h3", {}, "Upload a version"),
      form([field("Version", "version"), h("label", {}, "Workbook (.xlsx)", h("input", { name: "file", type: "file", accept: ".xlsx", required: true }))],
        "Upload", async (d) => {
          const v = await api("POST", `/engines/${id}/versions`, d);
          await showEngine(id);
          view.append(h("section", { id: "test-key" }, h("h2", {}, `Version ${v.version} uploaded`),
            h("p", {}, "Its test API key is shown only once:"), h("span", { class: "secret" }, v.test_api_key)));
        }), uploadResult),
    h("section", {}, h("h2", {}, "Consumer access"),
      e.consumers.length ? h("table", { id: "access" }, h("tr", {}, h("th", {}, "Consumer"), h("th", {}, "Execute"), h("th", {}, "View jobs"), h("th", {}, "Download"), h("th", {}, "About")), accessRows) : h("p", {}, "No consumer has access yet."),
      consumers.length ? form([
        h("label", {}, "Consumer", h("select", { name: "consumer" }, consumers.map(c => h("option", { value: c.id }, c.name)))),
        ...["can_execute", "can_view_jobs", "can_download", "can_view_about"].map(f => h("label", {}, h("input", { type: "checkbox", name: f, checked: true }), " ", f))],
        "Grant access", async (d) => {
          const flags = Object.fromEntries(["can_execute", "can_view_jobs", "can_download", "can_view_about"].map(f => [f, d.get(f) === "on"]));
          await api("PUT", `/engines/${id}/access/${d.get("consumer")}`, flags); toast("Access saved"); showEngine(id);
        }) : h("p", {}, "Create a consumer first.")));
}

async function showConsumers() {
  const consumers = await api("GET", "/consumers").catch((x) => { if (x.status === 405) return null; throw x; });
  render(
    h("section", {}, h("h2", {}, "Consumers"),
      consumers && consumers.length ? h("table", { id: "consumers" }, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Key"), h("th", {}, "Last used")),
        consumers.map(c => h("tr", {}, h("td", {}, c.name), h("td", {}, h("code", {}, c.api_key)), h("td", {}, c.last_used_at || "never"))))
        : h("p", {}, "No consumers yet.")),
    h("section", {}, h("h2", {}, "New consumer"),
      form([field("Name", "name")], "Create consumer", async (d) => {
        const c = await api("POST", "/consumers", { name: d.get("name") });
        await showConsumers();
        view.append(h("section", { id: "new-key" }, h("h2", {}, `API key for ${c.name}`),
          h("p", {}, "Store it now: it is shown only once."), h("span", { class: "secret" }, c.api_key)));
      })));
}

async function route() {
  const hash = location.hash || "#/engines";
  nav.hidden = false;
  try {
    const m = hash.match(/^#\/engines\/([0-9a-f-]{36})$/);
    if (m) await showEngine(m[1]);
    else if (hash === "#/consumers") await showConsumers();
    else await showEngines();
  } catch (x) {
    if (!(x instanceof ApiError) || (x.status !== 401 && x.status !== 403)) render(h("p", { class: "error" }, x.message));
  }
}

document.getElementById("logout").addEventListener("click", async () => {
  await api("POST", "/auth/logout").catch(() => {});
  showLogin();
});
window.addEventListener("hashchange", route);
route();
