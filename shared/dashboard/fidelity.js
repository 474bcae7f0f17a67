// Fidelity: a version's check against the values Excel saved, the differing cells, and the
// engine override. It says what was checked and what was not: a workbook without values saved
// by Excel has nothing to compare, which is not the same as matching Excel.
import { api, breadcrumbs, fmt, form, h, render, section, table, toast } from "./lib.js";

const ENGINES = [["ironcalc", "IronCalc (fast)"], ["formulas", "formulas"]];
const plural = (n, one, many = `${one}s`) => `${fmt(n)} ${n === 1 ? one : many}`;
const WHY = {
  no_cached_value: "No value saved by Excel (the file was last saved by a program that does not store calculated values, or saved without calculating)",
  volatile: "A volatile function (NOW, TODAY, RAND...), whose value changes on every calculation",
  external: "A reference to another workbook",
  array_area: "The rest of an array formula's area (its first cell is compared)",
  data_table: "In an Excel what-if data table, kept as Excel's saved values",
};

// What the check compared, and what it left out and why.
function verdict(r) {
  const skipped = Object.entries(r.skipped || {}).filter(([, n]) => n > 0);
  const notChecked = skipped.map(([why, n]) => h("li", { "data-reason": why }, `${WHY[why] || why}: ${plural(n, "formula cell")}.`));
  if (r.flagged_total) notChecked.push(h("li", { "data-reason": "flagged" }, `A construct the engine is known to get wrong: ${plural(r.flagged_total, "formula cell")}.`));
  const left = notChecked.length ? [h("p", {}, "Not compared:"), h("ul", { id: "fidelity-skipped" }, notChecked)] : "";
  let said;
  if (!r.checked) said = h("p", { id: "fidelity-verdict" }, "This version has no stored check.");
  else if (!r.cells_compared) {
    said = h("p", { id: "fidelity-verdict", class: "warning" }, "No formula cell could be compared with Excel, so this check says nothing about whether the results match Excel's. ",
      (r.skipped || {}).no_cached_value ? "Open the workbook in Excel, let it calculate, save it and upload it again to have it checked." : "");
  } else if (r.mismatches_total === 0) {
    said = h("p", { id: "fidelity-verdict", class: "ok" }, r.cells_compared === 1 ? "The one compared formula cell matches the value Excel saved." : `All ${fmt(r.cells_compared)} compared formula cells match the values Excel saved.`);
  } else {
    said = h("p", { id: "fidelity-verdict", class: "error" },
      `${fmt(r.mismatches_total)} of ${plural(r.cells_compared, "compared formula cell")} ${r.mismatches_total === 1 ? "differs" : "differ"} from the values Excel saved.`);
  }
  return [said, left];
}

// Cells calling a function the engine does not implement, and the outputs whose jobs fail for it.
function unimplemented(r) {
  const u = r.unimplemented || {};
  if (!u.cells_total) return "";
  const cells = (u.cells || []).map(c => h("tr", {}, h("td", {}, c.sheet), h("td", {}, c.cell), h("td", {}, h("code", {}, c.formula)), h("td", {}, c.functions.join(", "))));
  const outputs = (u.outputs || []).map(o => h("li", {}, `${o.output}: depends on ${o.cell}, which calls ${o.function}; its jobs fail rather than return a value.`));
  return section("Functions the engine does not implement",
    h("p", { class: "error", id: "unimplemented-verdict" }, `${plural(u.cells_total, "formula cell")} ${u.cells_total === 1 ? "calls" : "call"} ${u.functions.join(", ")}; ${plural(u.dependants_total || 0, "more cell")} ${u.dependants_total === 1 ? "is" : "are"} calculated from them.`),
    outputs.length ? h("ul", { id: "unimplemented-outputs" }, outputs) : "",
    table("unimplemented-cells", ["Sheet", "Cell", "Formula", "Function"], cells));
}

// Excel's functions and how the service calculates each (GET /functions), with a filter.
function supportTable(s) {
  const yes = (b) => (b ? "yes" : "no");
  const rows = s.functions.map(f => h("tr", { "data-function": f.function }, h("td", {}, f.function), h("td", {}, yes(f.ironcalc)), h("td", {}, yes(f.formulas)),
    h("td", {}, f.layer || ""), h("td", {}, f.status), h("td", { class: "num" }, f.conformance ? `${f.conformance.service} of ${f.conformance.cases}` : "")));
  const filter = h("input", { type: "search", id: "function-filter", placeholder: "Function name", "aria-label": "Filter functions" });
  const body = h("div", {}, table("function-support", ["Function", "IronCalc", "formulas", "Correction layer", "Status", "Conformance"], rows));
  filter.addEventListener("input", () => {
    const q = filter.value.trim().toUpperCase();
    body.querySelectorAll("tr[data-function]").forEach(tr => { tr.hidden = q !== "" && !tr.dataset.function.includes(q); });
  });
  return section("Function support",
    h("details", { id: "function-support-details" }, h("summary", {}, `Excel's functions (${fmt(s.functions.length)}) and how each is calculated`), filter, body));
}

export async function show(engineId, versionId) {
  const [e, r, s] = await Promise.all([api("GET", `/engines/${engineId}`), api("GET", `/engines/${engineId}/versions/${versionId}/fidelity`),
    api("GET", "/functions").catch(() => null)]);
  const v = e.versions.find(x => x.id === versionId);
  const lines = Object.entries(r.engines || {}).map(([name, l]) => h("tr", {}, h("td", {}, name), h("td", {}, l.status || ""),
    h("td", { class: "num" }, fmt(l.cells_compared)), h("td", { class: "num" }, fmt(l.cells_matching)),
    h("td", { class: "num" }, l.match_rate === null || l.match_rate === undefined ? "—" : `${fmt(l.match_rate * 100)}%`), h("td", {}, l.error || "")));
  const rows = r.mismatches.map(m => h("tr", {}, h("td", {}, m.sheet), h("td", {}, m.cell), h("td", {}, h("code", {}, m.formula)),
    h("td", {}, fmt(m.expected)), h("td", {}, fmt(m.actual))));
  const select = h("select", { id: "calc-engine", name: "calc_engine" }, ENGINES.map(([k, label]) => h("option", { value: k, selected: k === r.calc_engine }, label)));
  const noneDiffer = !r.checked ? "No stored check." : r.cells_compared ? "Every compared cell matches Excel." : "No cell was compared, so none is listed.";
  render(
    breadcrumbs({ label: "Engines", href: "#/engines" }, { label: e.name, href: `#/engines/${engineId}` }, { label: `Version ${v.version} fidelity` }),
    section(`Fidelity of version ${v.version}`,
      verdict(r),
      r.checked ? h("dl", { class: "cards", id: "fidelity-summary" },
        [["Engine used", r.calc_engine + (r.calc_engine_pinned ? " (pinned)" : "")], ["Cells compared", fmt(r.cells_compared)],
         ["Cells matching", r.cells_compared ? fmt(r.cells_matching) : "—"], ["Differing", r.cells_compared ? fmt(r.mismatches_total) : "—"],
         ["Match", r.match_rate === null ? "—" : `${fmt(r.match_rate * 100)}%`]].map(([k, x]) => h("div", { class: "card" }, h("dt", {}, k), h("dd", {}, x))))
        : "",
      r.unsupported_functions.length ? h("p", {}, "Functions the engine does not support: ", r.unsupported_functions.join(", ")) : "",
      (r.flagged_outputs || []).length ? h("ul", { id: "flagged-outputs" }, r.flagged_outputs.map(o =>
        h("li", {}, `${o.output}: calculated from ${o.cell}, which the service cannot calculate as Excel would (${o.reason}); jobs answer it with the engine's value.`))) : ""),
    unimplemented(r),
    section("Engines checked", table("engines-checked", ["Engine", "Status", "Compared", "Matching", "Match", "Error"], lines, { empty: "None." })),
    section("Differing cells",
      r.mismatches_total > r.mismatches.length ? h("p", { class: "muted" }, `The first ${r.mismatches.length} of ${r.mismatches_total}.`) : "",
      table("mismatches", ["Sheet", "Cell", "Formula", "Excel's value", "Ours"], rows, { empty: noneDiffer })),
    section("Engine override",
      h("p", {}, "Pin the engine that calculates this version. The check chooses the one that matches Excel best unless you pin one."),
      form([h("div", { class: "field", "data-field": "calc_engine" }, h("label", { for: "calc-engine" }, "Calculation engine"), select, h("small", { class: "field-error", role: "alert" }))],
        "Pin engine", async (d) => {
          await api("PATCH", `/engines/${engineId}/versions/${versionId}`, { calc_engine: d.get("calc_engine") });
          toast(`Version ${v.version} is calculated by ${d.get("calc_engine")}`); await show(engineId, versionId);
        }, { id: "override" })),
    s ? supportTable(s) : "");
}
