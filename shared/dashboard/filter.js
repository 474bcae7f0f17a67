// A search box over a list already on the page (engines, consumers, users): a row stays when its
// data-search holds every word typed. What was typed is kept for the session, so the list stays
// filtered when a page redraws it after an action.
import { h } from "./lib.js";

const words = (text) => text.toLowerCase().split(/\s+/).filter(Boolean);

// `list` is what table() made (a table in its wrapper, or the "Nothing yet" line): no rows, no box.
export function searchBox(id, label, list, { what = "rows" } = {}) {
  const rows = [...list.querySelectorAll("tbody tr[data-search]")];
  if (!rows.length) return "";
  const key = `search.${id}`;
  const input = h("input", { type: "search", id, value: sessionStorage.getItem(key) || "", autocomplete: "off", spellcheck: "false" });
  const said = h("span", { class: "muted", role: "status", id: `${id}-count` });
  const apply = () => {
    const wanted = words(input.value);
    let shown = 0;
    for (const row of rows) {
      row.hidden = !wanted.every((w) => row.dataset.search.includes(w));
      if (!row.hidden) shown += 1;
    }
    list.hidden = shown === 0;
    said.textContent = !wanted.length ? "" : shown ? `${shown} of ${rows.length} ${what}` : `No ${what} match “${input.value.trim()}”.`;
  };
  input.addEventListener("input", () => { sessionStorage.setItem(key, input.value); apply(); });
  apply();
  return h("div", { class: "toolbar search" }, h("label", { for: id }, label), input, said);
}

// What a row is found by: the texts given, in lower case.
export const searchable = (...texts) => texts.filter(Boolean).join(" ").toLowerCase();
