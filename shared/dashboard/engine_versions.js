// An engine's Versions tab: the versions (activate, delete, fidelity, cost per job) and the
// upload (drag and drop, progress, the test key shown once).
import { action, api, field, fmt, form, h, secretOnce, section, table, toast, upload } from "./lib.js";
import { activateVersion, testsWord } from "./releases.js";

// A version's fidelity in a word or two: nothing compared is not a match.
export const fidelityWord = (f) => (!f.cells_compared ? "not compared with Excel" : f.match_rate === null ? "not checked" : `${fmt(f.match_rate * 100)}% match`);

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
        h("h4", {}, "Its named ranges: the inputs and outputs calls use"), rangesTable(v),
        h("p", {}, h("a", { href: `#/engines/${engineId}/versions/${v.id}/schemas` }, "Set its schemas"), " · ",
          h("a", { href: `#/engines/${engineId}/versions/${v.id}/try` }, "Try it")));
      target.scrollIntoView({ block: "nearest" });
    } catch (x) {
      if (x.status === 413 || x.status === 400 || x.status === 422) x.fields = { ...(x.fields || {}), file: x.message };
      if (x.status === 409) x.fields = { version: x.message };
      throw x;
    } finally { progress.hidden = true; }
  }, { id: "upload", clears: [result] });
  return [f, result];
}

const shape = (r) => (r.rows === 1 && r.cols === 1 ? "single cell" : r.rows === 1 ? `row of ${r.cols}` : r.cols === 1 ? `column of ${r.rows}` : `${r.rows} × ${r.cols} block`);

// A version's named ranges: its inputs and outputs, with their shapes.
export function rangesTable(v) {
  return table("ranges", ["Name", "Input/output", "Sheet", "Address", "Shape"], v.named_ranges.map(r => h("tr", {},
    h("td", {}, h("code", {}, r.name)), h("td", {}, r.kind), h("td", {}, r.sheet), h("td", {}, r.ref), h("td", {}, shape(r), r.is_date ? ", date" : ""))),
  { empty: "This version has no named ranges." });
}

const cost = (v) => h("td", { class: "num", title: v.cost ? `Measured when checked: p50 ${fmt(v.cost.calc_ms_p50)} ms, p95 ${fmt(v.cost.calc_ms_p95)} ms, ${fmt(v.cost.peak_memory_mb)} MB` : "" },
  v.cost ? `${fmt(v.cost.calc_ms_p95)} ms` : "—", v.cost && v.cost.lane === "slow" ? h("span", { class: "badge" }, "slow lane") : "");

export function versionsTab(e, refresh) {
  const id = e.id;
  const rows = e.versions.map(v => h("tr", { "data-version": v.version },
    h("td", {}, v.version, " ", v.is_active ? h("span", { class: "badge" }, "active") : ""),
    h("td", {}, v.filename),
    h("td", {}, v.calc_engine, v.calc_engine_pinned ? " (pinned)" : ""),
    h("td", {}, v.fidelity ? h("a", { href: `#/engines/${id}/versions/${v.id}/fidelity` }, fidelityWord(v.fidelity)) : "—"),
    h("td", {}, v.document_storage ? v.document_storage.status.replace("_", " ") : "—"),
    cost(v),
    h("td", {}, v.tests ? h("a", { href: `#/engines/${id}/tests` }, testsWord(v.tests)) : "—"),
    h("td", { class: "row-actions" },
      h("a", { href: `#/engines/${id}/versions/${v.id}/try` }, "Try it"),
      h("a", { href: `#/engines/${id}/versions/${v.id}/schemas` }, "Schemas"),
      e.versions.length > 1 ? h("a", { href: `#/engines/${id}/versions/${v.id}/compare` }, "Compare…") : "",
      h("a", { href: `#/engines/${id}/versions/${v.id}/replay` }, "Replay…"),
      v.is_active ? "" : action("Activate", () => activateVersion(id, v, refresh)),
      v.is_active ? "" : action("Delete", async () => { await api("DELETE", `/engines/${id}/versions/${v.id}`); toast(`Version ${v.version} deleted`); await refresh(); },
        { cls: "danger", confirmText: `Delete version ${v.version}? Its workbook is removed; its jobs stay in the history.`, ariaLabel: `Delete version ${v.version}` }))));
  return section("Versions",
    table("versions", ["Version", "File", "Engine", "Fidelity", "Document copy", "Cost per job (p95)", "Tests", ""], rows, { empty: "No versions yet." }),
    h("h3", {}, "Upload a version"), uploadSection(id, refresh));
}
