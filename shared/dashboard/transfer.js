// Engine export and import: the "Export" button of an engine's header (a zip download of
// GET /engines/{id}/export) and the "Import engine" section of the engines list (POST
// /engines/import), which shows what the import changed and each version's new test key once.
import { SLUG_PATTERN, SLUG_RULE, field, form, h, secretOnce, section, upload } from "./lib.js";

export function exportButton(e) {
  return h("a", { class: "button secondary", id: "export-engine", href: `/engines/${e.id}/export`, download: `${e.slug}.sheetcalc-engine.zip`,
    title: "Download the engine's versions, schemas, engine choices and test cases (no keys, consumers or secrets)" }, "Export");
}

function imported(body) {
  const e = body.engine;
  return h("div", { id: "import-result" },
    h("p", { class: "success" }, "Imported as ", h("a", { href: `#/engines/${e.id}` }, e.name), " (", h("code", {}, e.slug), ")."),
    h("ul", { class: "import-changes" }, body.changes.map(c => h("li", {}, c))),
    body.versions.map(v => secretOnce(`import-key-${v.id}`, `Test key of version ${v.version}`, v.test_api_key, "this test key")));
}

export function importSection() {
  const result = h("div", { "aria-live": "polite" });
  return section("Import engine",
    h("p", { class: "hint" }, "A zip exported from this or another sheetcalc service. Each version is uploaded and checked again; keys, consumers and the IP whitelist are never in an export."),
    form([field("Export file (.zip)", "file", { type: "file", accept: ".zip,application/zip" }),
          field("Slug (optional)", "slug", { required: false, pattern: SLUG_PATTERN, patternMessage: SLUG_RULE, hint: "The archive's slug when left empty (with a suffix if it is taken)." }),
          field("Name (optional)", "name", { required: false, maxlength: 255 })],
      "Import engine", async (d) => {
        if (!d.get("slug")) d.delete("slug");
        if (!d.get("name")) d.delete("name");
        const body = await upload("/engines/import", d, () => {});
        result.replaceChildren(imported(body));
      }, { id: "import-engine", clears: [result] }),
    result);
}
