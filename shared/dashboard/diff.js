// Compare: what changed from another version (default the active one) to this one: named
// ranges, schemas, and the formulas and constants of each sheet (capped lists, full counts).
import { api, breadcrumbs, fmt, h, render, section, table } from "./lib.js";

const plural = (n, one, many = `${one}s`) => `${fmt(n)} ${n === 1 ? one : many}`;
const shown = (v) => (v === null || v === undefined ? "—" : typeof v === "string" ? v : fmt(v));
const where = (r) => `${r.sheet}!${r.ref} (${r.rows} × ${r.cols}, ${r.role})`;

function rangesSection(d) {
  const n = d.named_ranges;
  const rows = [
    ...n.added.map(r => h("tr", { "data-change": "added" }, h("td", {}, h("code", {}, r.name)), h("td", {}, "added"), h("td", {}, "—"), h("td", {}, where(r)))),
    ...n.removed.map(r => h("tr", { "data-change": "removed" }, h("td", {}, h("code", {}, r.name)), h("td", {}, "removed"), h("td", {}, where(r)), h("td", {}, "—"))),
    ...n.changed.map(c => h("tr", { "data-change": "changed" }, h("td", {}, h("code", {}, c.name)), h("td", {}, `changed: ${c.fields.join(", ")}`), h("td", {}, where(c.from)), h("td", {}, where(c.to)))),
  ];
  return section("Named ranges", table("diff-ranges", ["Name", "Change", "Before", "After"], rows, { empty: "No named range changed." }));
}

function schemaSection(title, id, s) {
  const rows = [
    ...s.added.map(p => h("tr", {}, h("td", {}, h("code", {}, p)), h("td", {}, "added"), h("td", {}, ""))),
    ...s.removed.map(p => h("tr", {}, h("td", {}, h("code", {}, p)), h("td", {}, "removed"), h("td", {}, ""))),
    ...s.changed.map(c => h("tr", {}, h("td", {}, h("code", {}, c.name)), h("td", {}, "changed"),
      h("td", {}, c.keywords.map(k => `${k}: ${JSON.stringify(c.from[k] ?? null)} → ${JSON.stringify(c.to[k] ?? null)}`).join("; ")))),
    ...s.required_added.map(p => h("tr", {}, h("td", {}, h("code", {}, p)), h("td", {}, "now required"), h("td", {}, ""))),
    ...s.required_removed.map(p => h("tr", {}, h("td", {}, h("code", {}, p)), h("td", {}, "no longer required"), h("td", {}, ""))),
  ];
  return section(title, table(id, ["Property", "Change", "Detail"], rows, { empty: "No difference." }));
}

function cellsSection(c) {
  const sheets = c.sheets.filter(s => s.formulas_changed || s.constants_changed || s.status !== "kept" || !s.complete);
  const lists = sheets.map(s => h("div", { class: "diff-sheet", "data-sheet": s.sheet },
    h("h4", {}, `${s.sheet}${s.status === "kept" ? "" : ` (sheet ${s.status})`}: ${plural(s.formulas_changed, "formula")} and ${plural(s.constants_changed, "constant")} changed`),
    s.complete ? "" : h("p", { class: "warning" }, "Not compared in full: the comparison ran out of time."),
    [["formula", s.formula_cells, s.formulas_changed], ["constant", s.constant_cells, s.constants_changed]].filter(([, , n]) => n).map(([kind, cells, n]) => [
      n > cells.length ? h("p", { class: "muted" }, `The first ${cells.length} of ${fmt(n)} ${kind} changes.`) : "",
      table(`diff-${kind}s-${s.sheet}`.replace(/[^A-Za-z0-9_-]/g, "_"), ["Cell", "Before", "After"],
        cells.map(x => h("tr", {}, h("td", {}, x.cell), h("td", {}, h("code", {}, shown(x.from))), h("td", {}, h("code", {}, shown(x.to)))))),
    ])));
  return section("Formulas and constants",
    h("p", { id: "diff-cells-summary", class: c.complete ? "" : "warning" },
      `${plural(c.formulas_changed, "formula")} and ${plural(c.constants_changed, "constant")} changed`,
      c.complete ? "." : " in the part compared; the workbooks could not be compared in full within the time limit."),
    lists.length ? lists : h("p", {}, "No cell changed."));
}

export async function show(engineId, versionId, against) {
  const e = await api("GET", `/engines/${engineId}`);
  const v = e.versions.find(x => x.id === versionId);
  const others = e.versions.filter(x => x.id !== versionId);
  const chosen = against || (e.active_version_id !== versionId && e.active_version_id) || (others[0] && others[0].id);
  const picker = h("select", { id: "diff-against", "aria-label": "Compare with" },
    others.map(o => h("option", { value: o.id, selected: o.id === chosen }, `${o.version}${o.is_active ? " (active)" : ""}`)));
  picker.addEventListener("change", () => show(engineId, versionId, picker.value));
  const crumbs = breadcrumbs({ label: "Engines", href: "#/engines" }, { label: e.name, href: `#/engines/${engineId}/versions` }, { label: `Compare version ${v.version}` });
  if (!chosen || chosen === versionId) {
    render(crumbs, section(`Compare version ${v.version}`, h("p", {}, "There is no other version to compare with.")));
    return;
  }
  const d = await api("GET", `/engines/${engineId}/versions/${versionId}/diff?against=${chosen}`);
  render(crumbs,
    section(`Compare version ${v.version}`,
      h("p", {}, "Changes from ", h("label", { for: "diff-against" }, "version "), picker, ` to version ${v.version}.`),
      d.same_workbook ? h("p", { class: "muted" }, "Both versions were uploaded from the same workbook file.") : ""),
    rangesSection(d), schemaSection("Input schema", "diff-input-schema", d.input_schema),
    schemaSection("Output schema", "diff-output-schema", d.output_schema), cellsSection(d.cells));
}
