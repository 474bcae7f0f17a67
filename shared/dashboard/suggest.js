// The schema suggested from the workbook (types, Excel's data validation, shapes), offered in
// the schema editor: accepting it fills the editor, where it can still be changed.
import { api, h } from "./lib.js";

export async function offerSuggestion(engineId, versionId, target, editor) {
  let s;
  try { s = await api("GET", `/engines/${engineId}/versions/${versionId}/suggested-schema`); }
  catch { return; } // no suggestion available: the editor works without it
  const fill = () => {
    for (const name of ["input_schema", "output_schema"]) {
      const area = editor.querySelector(`[name=${name}]`);
      area.value = JSON.stringify(s[name], null, 2);
      area.dispatchEvent(new Event("input"));
    }
    editor.querySelector("textarea").focus();
  };
  target.replaceChildren(h("div", { class: "suggestion" },
    h("p", {}, "A schema suggested from the workbook (cell types, number formats and Excel's data validation) is available."),
    h("button", { type: "button", class: "secondary", id: "use-suggestion", onclick: fill }, "Use the suggested schema"),
    h("details", {}, h("summary", {}, "Show it"), h("pre", { class: "json" }, JSON.stringify(s, null, 2)))));
}
