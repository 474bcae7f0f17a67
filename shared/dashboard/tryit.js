// Try it: a form generated from the version's input schema (or, without one, its named
// ranges) that runs the version as a test job and shows the outputs in their shapes, the
// time it took and a download of the filled workbook.
import { action, api, breadcrumbs, form, h, namedValues, render, section } from "./lib.js";
import { downloadLink } from "./jobs.js";

// What to ask for, per input: its shape (rows × cols) and the type of each cell.
function inputsOf(v) {
  const ranges = Object.fromEntries(v.named_ranges.filter(r => r.kind === "input").map(r => [r.name.toLowerCase(), r]));
  const props = v.input_schema && v.input_schema.properties;
  if (props) {
    return Object.entries(props).map(([name, s]) => {
      const r = ranges[name.toLowerCase()];
      const item = s.type === "array" ? (s.items && s.items.type === "array" ? s.items.items || {} : s.items || {}) : s;
      return { name, rows: r ? r.rows : 1, cols: r ? r.cols : 1, cell: cellKind(item, r), title: s.title || s.description, free: !r && s.type === "array" };
    });
  }
  return Object.values(ranges).map(r => ({ name: r.name, rows: r.rows, cols: r.cols, cell: { type: r.is_date ? "date" : "number" } }));
}

function cellKind(s, r) {
  if (s.enum) return { type: "enum", values: s.enum };
  if (s.format === "date" || (r && r.is_date && s.type !== "number")) return { type: "date" };
  if (s.type === "boolean") return { type: "boolean" };
  if (s.type === "string") return { type: "text" };
  return { type: "number", min: s.minimum, max: s.maximum, step: s.type === "integer" ? 1 : "any" };
}

function cellInput(name, cell, label) {
  const attrs = { name, "aria-label": label, required: true };
  if (cell.type === "enum") return h("select", attrs, cell.values.map(x => h("option", { value: JSON.stringify(x) }, String(x))));
  if (cell.type === "boolean") return h("input", { ...attrs, type: "checkbox", required: false });
  if (cell.type === "date") return h("input", { ...attrs, type: "date" });
  if (cell.type === "text") return h("input", { ...attrs, type: "text" });
  return h("input", { ...attrs, type: "number", step: cell.step ?? "any", min: cell.min, max: cell.max, inputmode: "decimal" });
}

function inputField(inp) {
  const n = inp.rows * inp.cols;
  const box = h("div", { class: "field", "data-field": inp.name });
  if (inp.free) {
    box.append(h("label", { for: `in-${inp.name}` }, `${inp.name} (JSON list)`), h("textarea", { id: `in-${inp.name}`, name: inp.name, rows: 3, class: "code" }, "[]"));
  } else if (n === 1) {
    const el = cellInput(inp.name, inp.cell, inp.name);
    el.id = `in-${inp.name}`; el.removeAttribute("aria-label");
    box.append(h("label", { for: el.id }, inp.name), el);
  } else {
    const grid = h("table", { class: "grid", "aria-label": inp.name },
      Array.from({ length: inp.rows }, (_, i) => h("tr", {}, Array.from({ length: inp.cols }, (_, j) =>
        h("td", {}, cellInput(`${inp.name}[${i}][${j}]`, inp.cell, `${inp.name} row ${i + 1} column ${j + 1}`))))));
    box.append(h("span", { class: "label" }, `${inp.name} (${inp.rows === 1 || inp.cols === 1 ? `list of ${n}` : `${inp.rows} × ${inp.cols} table`})`), h("div", { class: "table-wrap" }, grid));
  }
  if (inp.title) box.append(h("small", { class: "hint" }, inp.title));
  box.append(h("small", { class: "field-error", role: "alert" }));
  return box;
}

function valueOf(cell, raw, el) {
  if (cell.type === "boolean") return el.checked;
  if (cell.type === "enum") return JSON.parse(raw);
  if (cell.type === "number") return raw === "" ? null : Number(raw);
  return raw;
}

function collect(f, inputs) {
  const out = {};
  for (const inp of inputs) {
    if (inp.free) { out[inp.name] = JSON.parse(f.elements[inp.name].value || "null"); continue; }
    if (inp.rows * inp.cols === 1) { const el = f.elements[inp.name]; out[inp.name] = valueOf(inp.cell, el.value, el); continue; }
    const rows = Array.from({ length: inp.rows }, (_, i) => Array.from({ length: inp.cols }, (_, j) => {
      const el = f.elements[`${inp.name}[${i}][${j}]`]; return valueOf(inp.cell, el.value, el);
    }));
    out[inp.name] = inp.rows === 1 ? rows[0] : inp.cols === 1 ? rows.map(r => r[0]) : rows;
  }
  return out;
}


const sleep = (ms) => new Promise(r => setTimeout(r, ms));

// The input a refusal is about, so its message shows beside that input: the service names it as
// "(at 'name/...')" (the schema's check) or "'name' expects ..." (the workbook's ranges).
export function inputOf(message, names) {
  const byLower = Object.fromEntries(names.map(n => [n.toLowerCase(), n]));
  const at = /\(at '([^'/]+)/.exec(message);
  if (at && byLower[at[1].toLowerCase()]) return byLower[at[1].toLowerCase()];
  for (const m of message.matchAll(/'([^']+)'/g)) if (byLower[m[1].toLowerCase()]) return byLower[m[1].toLowerCase()];
  return null;
}

function placed(x, inputs) {
  if (x.status !== 400 || !x.message) return x;
  const name = inputOf(x.message, inputs.map(i => i.name));
  if (name) x.fields = { [name]: x.message.replace(/^Input validation failed: /, "").replace(/ \(at '[^']*'\)$/, "") };
  return x;
}

export async function show(engineId, versionId) {
  const e = await api("GET", `/engines/${engineId}`);
  const v = e.versions.find(x => x.id === versionId);
  const inputs = inputsOf(v);
  const result = h("div", { id: "try-result", "aria-live": "polite" });
  const f = form(inputs.map(inputField), "Run", async (d, el) => {
    const body = collect(el, inputs);
    result.replaceChildren(h("p", { class: "loading", role: "status" }, "Running…"));
    const started = performance.now();
    let job;
    try { job = await api("POST", `/engines/${engineId}/versions/${versionId}/test-jobs`, { inputs: body }); }
    catch (x) { result.replaceChildren(); throw placed(x, inputs); }
    let delay = 100;
    let j = await api("GET", `/engines/${engineId}/jobs/${job.job_id}`);
    while (j.status === "pending" || j.status === "processing") {
      await sleep(delay); delay = Math.min(delay * 2, 2000);
      j = await api("GET", `/engines/${engineId}/jobs/${job.job_id}`);
    }
    const seen = Math.round(performance.now() - started);
    if (j.status === "failed") { result.replaceChildren(h("p", { class: "error", role: "alert" }, `The job failed: ${j.error_message}`)); return; }
    const dl = h("div", { id: "download" });
    result.replaceChildren(
      h("h3", {}, "Outputs"),
      ...namedValues("outputs", j.outputs),
      h("p", { id: "timing" }, `Calculated in ${j.execution_time_ms} ms (${seen} ms here, queue and polling included). `,
        h("a", { href: `#/engines/${engineId}/jobs/${j.job_id}` }, "Open the job")),
      action("Download the filled workbook", async () => downloadLink(engineId, j.job_id, dl), { cls: "primary" }), dl);
  }, { id: "try", clears: [result] });
  render(
    breadcrumbs({ label: "Engines", href: "#/engines" }, { label: e.name, href: `#/engines/${engineId}` }, { label: `Try version ${v.version}` }),
    section(`Try version ${v.version}`,
      h("p", { class: "muted" }, v.input_schema ? "The form follows the version's input schema." : "The form follows the workbook's input ranges (no input schema yet).",
        " Runs are recorded as test jobs."),
      inputs.length ? f : h("p", {}, "This version has no inputs.")),
    section("Result", result));
}
