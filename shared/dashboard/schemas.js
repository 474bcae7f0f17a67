// Schemas: edit a version's input_schema / output_schema (JSON Schema Draft 7) and see the
// server's warnings beside them.
import { api, breadcrumbs, form, h, render, section, toast } from "./lib.js";

const pretty = (v) => (v ? JSON.stringify(v, null, 2) : "");

function schemaField(label, name, value) {
  const id = `schema-${name}`;
  const area = h("textarea", { id, name, rows: 14, spellcheck: "false", class: "code", "aria-describedby": `${id}-err` }, value);
  const err = h("small", { class: "field-error", id: `${id}-err`, role: "alert" });
  area.addEventListener("input", () => {
    try { if (area.value.trim()) JSON.parse(area.value); err.textContent = ""; area.removeAttribute("aria-invalid"); }
    catch (x) { err.textContent = `Not valid JSON: ${x.message}`; area.setAttribute("aria-invalid", "true"); }
  });
  return h("div", { class: "field", "data-field": name }, h("label", { for: id }, label), area, err);
}

function parse(text, name) {
  if (!text.trim()) return null;
  try { return JSON.parse(text); }
  catch (x) { const e = new Error(`${name} is not valid JSON: ${x.message}`); e.fields = { [name]: `Not valid JSON: ${x.message}` }; throw e; }
}

export async function show(engineId, versionId, warnings) {
  const e = await api("GET", `/engines/${engineId}`);
  const v = e.versions.find(x => x.id === versionId);
  const suggestion = h("div", { id: "suggestion" });
  const saved = h("div", { id: "schema-saved" });
  const f = form([
    schemaField("Input schema (JSON Schema Draft 7)", "input_schema", pretty(v.input_schema)),
    schemaField("Output schema (JSON Schema Draft 7)", "output_schema", pretty(v.output_schema)),
  ], "Save schemas", async (d) => {
    const body = { input_schema: parse(String(d.get("input_schema")), "input_schema"), output_schema: parse(String(d.get("output_schema")), "output_schema") };
    let r;
    try { r = await api("PATCH", `/engines/${engineId}/versions/${versionId}`, body); }
    catch (x) {
      const which = ["input_schema", "output_schema"].find(n => x.message.startsWith(n));
      if (which && !Object.keys(x.fields || {}).length) x.fields = { [which]: x.message };
      throw x;
    }
    toast("Schemas saved");
    await show(engineId, versionId, r.warnings);
  }, { id: "schemas", clears: [saved] });
  const ranges = v.named_ranges.map(r => `${r.name} (${r.kind})`).join(", ");
  render(
    breadcrumbs({ label: "Engines", href: "#/engines" }, { label: e.name, href: `#/engines/${engineId}` }, { label: `Version ${v.version} schemas` }),
    section(`Schemas of version ${v.version}`,
      h("p", { class: "muted" }, "Named ranges: ", ranges || "none"),
      saved,
      suggestion, f));
  // The outcome of the last save, until the schemas are sent again.
  saved.replaceChildren(warnings && warnings.length ? h("ul", { class: "warnings", id: "schema-warnings", role: "status" }, warnings.map(w => h("li", {}, w)))
    : warnings ? h("p", { class: "ok", id: "schema-warnings", role: "status" }, "Saved. The schemas match the workbook's named ranges.") : "");
  const { offerSuggestion } = await import("./suggest.js");
  await offerSuggestion(engineId, versionId, suggestion, f);
}
