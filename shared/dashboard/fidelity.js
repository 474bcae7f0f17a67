// Fidelity: a version's check against the values Excel saved, the differing cells, and the
// engine override.
import { api, breadcrumbs, fmt, form, h, render, section, table, toast } from "./lib.js";

const ENGINES = [["ironcalc", "IronCalc (fast)"], ["formulas", "formulas"]];

export async function show(engineId, versionId) {
  const [e, r] = await Promise.all([api("GET", `/engines/${engineId}`), api("GET", `/engines/${engineId}/versions/${versionId}/fidelity`)]);
  const v = e.versions.find(x => x.id === versionId);
  const lines = Object.entries(r.engines || {}).map(([name, l]) => h("tr", {}, h("td", {}, name), h("td", {}, l.status || ""),
    h("td", { class: "num" }, fmt(l.cells_compared)), h("td", { class: "num" }, fmt(l.cells_matching)),
    h("td", { class: "num" }, l.match_rate === null || l.match_rate === undefined ? "—" : `${fmt(l.match_rate * 100)}%`), h("td", {}, l.error || "")));
  const rows = r.mismatches.map(m => h("tr", {}, h("td", {}, m.sheet), h("td", {}, m.cell), h("td", {}, h("code", {}, m.formula)),
    h("td", {}, fmt(m.expected)), h("td", {}, fmt(m.actual))));
  const select = h("select", { id: "calc-engine", name: "calc_engine" }, ENGINES.map(([k, label]) => h("option", { value: k, selected: k === r.calc_engine }, label)));
  render(
    breadcrumbs({ label: "Engines", href: "#/engines" }, { label: e.name, href: `#/engines/${engineId}` }, { label: `Version ${v.version} fidelity` }),
    section(`Fidelity of version ${v.version}`,
      r.checked ? h("dl", { class: "cards", id: "fidelity-summary" },
        [["Engine used", r.calc_engine + (r.calc_engine_pinned ? " (pinned)" : "")], ["Cells compared", fmt(r.cells_compared)],
         ["Cells matching", fmt(r.cells_matching)], ["Differing", fmt(r.mismatches_total)],
         ["Match", r.match_rate === null ? "—" : `${fmt(r.match_rate * 100)}%`]].map(([k, x]) => h("div", { class: "card" }, h("dt", {}, k), h("dd", {}, x))))
        : h("p", {}, "This version has no stored check."),
      r.unsupported_functions.length ? h("p", {}, "Functions the engine does not support: ", r.unsupported_functions.join(", ")) : ""),
    section("Engines checked", table("engines-checked", ["Engine", "Status", "Compared", "Matching", "Match", "Error"], lines, { empty: "None." })),
    section("Differing cells",
      r.mismatches_total > r.mismatches.length ? h("p", { class: "muted" }, `The first ${r.mismatches.length} of ${r.mismatches_total}.`) : "",
      table("mismatches", ["Sheet", "Cell", "Formula", "Excel's value", "Ours"], rows, { empty: "Every compared cell matches Excel." })),
    section("Engine override",
      h("p", {}, "Pin the engine that calculates this version. The check chooses the one that matches Excel best unless you pin one."),
      form([h("div", { class: "field", "data-field": "calc_engine" }, h("label", { for: "calc-engine" }, "Calculation engine"), select, h("small", { class: "field-error", role: "alert" }))],
        "Pin engine", async (d) => {
          await api("PATCH", `/engines/${engineId}/versions/${versionId}`, { calc_engine: d.get("calc_engine") });
          toast(`Version ${v.version} is calculated by ${d.get("calc_engine")}`); await show(engineId, versionId);
        }, { id: "override" })));
}
