// An engine's page: versions (drag-and-drop upload with progress, activate, delete), named
// ranges, settings with the IP whitelist, consumer access, code snippets, deletion.
import { action, api, breadcrumbs, checkbox, field, fmt, form, h, render, secretOnce, section, table, toast, upload, when } from "./lib.js";
import { exampleInputs, snippets } from "./snippets.js";

const shape = (r) => (r.rows === 1 && r.cols === 1 ? "single cell" : r.rows === 1 ? `row of ${r.cols}` : r.cols === 1 ? `column of ${r.rows}` : `${r.rows} × ${r.cols} block`);

// IPv4/IPv6 addresses or CIDR ranges, as the API accepts them; the server has the last word.
export function ipProblem(entry) {
  const [addr, bits, extra] = entry.split("/");
  if (extra !== undefined) return "has more than one '/'";
  const v4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/.test(addr);
  let v6 = false;
  if (!v4 && addr.includes(":")) { try { v6 = new URL(`http://[${addr}]/`).hostname.length > 2; } catch { v6 = false; } }
  if (!v4 && !v6) return "is not an IPv4 or IPv6 address";
  if (bits !== undefined && !(/^\d{1,3}$/.test(bits) && +bits <= (v4 ? 32 : 128))) return `has a prefix length that is not 0 to ${v4 ? 32 : 128}`;
  return null;
}

function whitelistField(engine) {
  const box = field("Allowed addresses (one per line)", "ip_whitelist", { type: "textarea", required: false, rows: 4,
    value: (engine.ip_whitelist || []).join("\n"), hint: "Addresses or CIDR ranges, e.g. 203.0.113.7 or 10.0.0.0/8 or 2001:db8::/32." });
  const area = box.querySelector("textarea");
  const err = box.querySelector(".field-error");
  area.addEventListener("input", () => {
    const bad = area.value.split(/\n/).map(s => s.trim()).filter(Boolean).map(s => [s, ipProblem(s)]).filter(([, p]) => p);
    err.textContent = bad.map(([s, p]) => `'${s}' ${p}`).join("; ");
    if (bad.length) area.setAttribute("aria-invalid", "true"); else area.removeAttribute("aria-invalid");
  });
  return box;
}

function uploadSection(engineId, after) {
  const result = h("div", { id: "upload-result" });
  const progress = h("progress", { max: 1, value: 0, hidden: true, "aria-label": "Upload progress" });
  const fileInput = h("input", { id: "workbook-file", name: "file", type: "file", accept: ".xlsx", required: true, class: "visually-hidden-file" });
  const chosen = h("span", { class: "chosen" }, "No file chosen");
  const drop = h("div", { class: "drop", id: "drop-zone", tabindex: "0", role: "button", "aria-label": "Drop a workbook here or choose one",
    onclick: () => fileInput.click(), onkeydown: (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); fileInput.click(); } } },
    h("strong", {}, "Drop an .xlsx workbook here"), " or click to choose one. ", chosen);
  const setFile = (files) => { fileInput.files = files; chosen.textContent = files.length ? files[0].name : "No file chosen"; };
  fileInput.addEventListener("change", () => { chosen.textContent = fileInput.files.length ? fileInput.files[0].name : "No file chosen"; });
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => { e.preventDefault(); drop.classList.remove("over"); setFile(e.dataTransfer.files); });
  const f = form([
    field("Version", "version", { maxlength: 100, hint: "For example 1.0 or 2026-03." }),
    h("div", { class: "field", "data-field": "file" }, h("label", { for: "workbook-file" }, "Workbook (.xlsx)"), fileInput, drop,
      h("small", { class: "field-error", role: "alert" })),
    progress,
  ], "Upload", async (d) => {
    progress.hidden = false; progress.value = 0;
    try {
      const v = await upload(`/engines/${engineId}/versions`, d, (p) => (progress.value = p));
      await after();
      const target = document.getElementById("upload-result");
      target.replaceChildren(
        secretOnce("test-key", `Version ${v.version} uploaded`, v.test_api_key, "its test API key"),
        v.warnings && v.warnings.length ? h("ul", { class: "warnings", id: "upload-warnings" }, v.warnings.map(w => h("li", {}, w))) : "",
        h("p", {}, h("a", { href: `#/engines/${engineId}/versions/${v.id}/schemas` }, "Set its schemas"), " · ",
          h("a", { href: `#/engines/${engineId}/versions/${v.id}/try` }, "Try it")));
      target.scrollIntoView({ block: "nearest" });
    } catch (x) {
      if (x.status === 413 || x.status === 400 || x.status === 422) x.fields = { ...(x.fields || {}), file: x.message };
      if (x.status === 409) x.fields = { version: x.message };
      throw x;
    } finally { progress.hidden = true; }
  }, { id: "upload" });
  return [f, result];
}

export async function show(id) {
  const [e, tenant] = await Promise.all([api("GET", `/engines/${id}`), api("GET", "/tenant/settings")]);
  const refresh = () => show(id);
  const active = e.versions.find(v => v.is_active);
  const latest = active || e.versions[0];
  const versionRows = e.versions.map(v => h("tr", { "data-version": v.version },
    h("td", {}, v.version, " ", v.is_active ? h("span", { class: "badge" }, "active") : ""),
    h("td", {}, v.filename),
    h("td", {}, v.calc_engine, v.calc_engine_pinned ? " (pinned)" : ""),
    h("td", {}, v.fidelity ? h("a", { href: `#/engines/${id}/versions/${v.id}/fidelity` }, v.fidelity.match_rate === null ? "no formulas checked" : `${fmt(v.fidelity.match_rate * 100)}% match`) : "—"),
    h("td", {}, v.document_storage ? v.document_storage.status.replace("_", " ") : "—"),
    h("td", { class: "num", title: v.cost ? `Measured when checked: p50 ${fmt(v.cost.calc_ms_p50)} ms, p95 ${fmt(v.cost.calc_ms_p95)} ms, ${fmt(v.cost.peak_memory_mb)} MB` : "" },
      v.cost ? `${fmt(v.cost.calc_ms_p95)} ms` : "—", v.cost && v.cost.lane === "slow" ? h("span", { class: "badge" }, "slow lane") : ""),
    h("td", { class: "row-actions" },
      h("a", { href: `#/engines/${id}/versions/${v.id}/try` }, "Try it"),
      h("a", { href: `#/engines/${id}/versions/${v.id}/schemas` }, "Schemas"),
      v.is_active ? "" : action("Activate", async () => { await api("POST", `/engines/${id}/versions/${v.id}/activate`); toast(`Version ${v.version} is active`); await refresh(); }),
      v.is_active ? "" : action("Delete", async () => { await api("DELETE", `/engines/${id}/versions/${v.id}`); toast(`Version ${v.version} deleted`); await refresh(); },
        { cls: "danger", confirmText: `Delete version ${v.version}? Its workbook is removed; its jobs stay in the history.`, ariaLabel: `Delete version ${v.version}` }))));
  const rangeRows = latest ? latest.named_ranges.map(r => h("tr", {},
    h("td", {}, h("code", {}, r.name)), h("td", {}, r.kind), h("td", {}, r.sheet), h("td", {}, r.ref), h("td", {}, shape(r), r.is_date ? ", date" : ""))) : [];
  const accessRows = e.consumers.map(c => h("tr", {}, h("td", {}, c.consumer_name),
    ...["can_execute", "can_view_jobs", "can_download", "can_view_about"].map(f => h("td", {}, c[f] ? "yes" : "no"))));

  const settingsForm = form([
    field("Name", "name", { value: e.name, maxlength: 255 }),
    field("Slug", "slug", { value: e.slug, pattern: "[a-z0-9-]+", hint: "Changing it changes the consumer URLs." }),
    field("Description", "description", { value: e.description || "", required: false }),
    checkbox("Only allow calls from the addresses below", "ip_whitelist_enabled", e.ip_whitelist_enabled),
    whitelistField(e),
  ], "Save settings", async (d, f) => {
    const list = String(d.get("ip_whitelist") || "").split(/\n/).map(s => s.trim()).filter(Boolean);
    const bad = list.filter(ipProblem);
    if (bad.length) { const x = new Error(`Fix the allowed addresses: ${bad.join(", ")}`); x.fields = { ip_whitelist: `${bad.map(s => `'${s}' ${ipProblem(s)}`).join("; ")}` }; throw x; }
    try {
      await api("PATCH", `/engines/${id}`, { name: d.get("name"), slug: d.get("slug"), description: d.get("description") || null,
        ip_whitelist_enabled: d.get("ip_whitelist_enabled") === "on", ip_whitelist: list });
    } catch (x) { if (x.status === 409) x.fields = { slug: x.message }; throw x; }
    toast("Settings saved"); await refresh();
  }, { id: "engine-settings" });

  render(
    breadcrumbs({ label: "Engines", href: "#/engines" }, { label: e.name }),
    h("section", {}, h("h2", {}, e.name),
      h("p", {}, "Slug ", h("code", {}, e.slug), e.description ? ` · ${e.description}` : ""),
      h("p", { class: "links" }, h("a", { href: `#/engines/${id}/jobs` }, "Jobs"), h("a", { href: `#/stats/engine/${id}` }, "Statistics"),
        active ? h("a", { href: `#/engines/${id}/versions/${active.id}/try` }, "Try the active version") : "")),
    section("Versions",
      table("versions", ["Version", "File", "Engine", "Fidelity", "Document copy", "Cost per job (p95)", ""], versionRows, { empty: "No versions yet." }),
      h("h3", {}, "Upload a version"), uploadSection(id, refresh)),
    section("Named ranges",
      latest ? h("p", { class: "muted" }, `Of version ${latest.version}.`) : "",
      table("ranges", ["Name", "Input/output", "Sheet", "Address", "Shape"], rangeRows, { empty: "Upload a version to see its named ranges." })),
    section("Use it from code", active ? snippets(tenant.slug, e, exampleInputs(active)) : h("p", {}, "Activate a version to call the engine.")),
    section("Settings", settingsForm),
    section("Consumer access",
      table("access", ["Consumer", "Execute", "View jobs", "Download", "About"], accessRows, { empty: "No consumer has access yet." }),
      h("p", {}, h("a", { href: "#/consumers" }, "Change access in the access matrix"))),
    section("Delete engine",
      h("p", {}, "Deleting removes its versions, access and stored workbooks. Its jobs and statistics stay."),
      action("Delete engine", async () => { await api("DELETE", `/engines/${id}`); toast(`${e.name} deleted`); location.hash = "#/engines"; },
        { cls: "danger", confirmText: `Delete the engine ${e.name}? This cannot be undone.` })),
  );
}
