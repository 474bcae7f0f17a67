// Consumers: list, create (key shown once), deactivate/reactivate, delete; the access matrix
// (consumers × engines, the four flags as toggles, and a grant removed outright).
import { removeGrant } from "./engine.js";
import { searchBox, searchable } from "./filter.js";
import { action, ago, api, field, form, h, render, secretOnce, section, table, toast } from "./lib.js";

const FLAGS = [["can_execute", "Execute"], ["can_view_jobs", "View jobs"], ["can_download", "Download"], ["can_view_about", "About"]];

function matrix(consumers, engines, accessByEngine) {
  if (!consumers.length || !engines.length) return h("p", { class: "empty" }, "Create a consumer and an engine to grant access.");
  const head = h("tr", {}, h("th", { scope: "col" }, "Consumer"), engines.map(e => h("th", { scope: "col" }, e.name)));
  const rows = consumers.map(c => h("tr", { "data-consumer": c.name }, h("th", { scope: "row" }, c.name, c.is_active ? "" : " (inactive)"),
    engines.map(e => {
      const grant = (accessByEngine[e.id] || []).find(a => a.consumer_id === c.id) || {};
      return h("td", { "data-engine": e.name }, h("fieldset", { class: "flags" },
        h("legend", { class: "sr-only" }, `${c.name} on ${e.name}`),
        FLAGS.map(([flag, label]) => {
          const id = `m-${c.id}-${e.id}-${flag}`;
          const box = h("input", { type: "checkbox", id, checked: !!grant[flag], onchange: async () => {
            box.disabled = true;
            try {
              await api("PUT", `/engines/${e.id}/access/${c.id}`, { [flag]: box.checked });
              toast(`${label} ${box.checked ? "granted to" : "taken from"} ${c.name} on ${e.name}`);
            } catch (x) { box.checked = !box.checked; toast(x.message); }
            finally { box.disabled = false; }
          } });
          return h("span", { class: "flag" }, box, h("label", { for: id }, label));
        }),
        grant.consumer_id ? h("span", { class: "flag remove" }, removeGrant(e.id, e.name, c.id, c.name, () => show())) : ""));
    })));
  return h("div", { class: "table-wrap" }, h("table", { id: "matrix", class: "matrix" }, h("thead", {}, head), h("tbody", {}, rows)));
}

export async function show(created) {
  const [consumers, engines] = await Promise.all([api("GET", "/consumers?include_inactive=true"), api("GET", "/engines")]);
  const access = await Promise.all(engines.map(e => api("GET", `/engines/${e.id}/access`)));
  const accessByEngine = Object.fromEntries(engines.map((e, i) => [e.id, access[i]]));
  const rows = consumers.map(c => h("tr", { "data-consumer": c.name, "data-search": searchable(c.name, c.api_key) },
    h("td", { "data-label": "Name" }, h("a", { href: `#/stats/consumer/${c.id}` }, c.name)), h("td", { "data-label": "Key" }, h("code", {}, c.api_key)),
    h("td", { "data-label": "State" }, c.is_active ? "active" : h("span", { class: "muted" }, "deactivated")), h("td", { "data-label": "Last used" }, ago(c.last_used_at)),
    h("td", { class: "row-actions" },
      action(c.is_active ? "Deactivate" : "Reactivate", async () => {
        await api("PATCH", `/consumers/${c.id}`, { is_active: !c.is_active });
        toast(`${c.name} ${c.is_active ? "deactivated: its key stops working" : "reactivated"}`); await show();
      }, { ariaLabel: `${c.is_active ? "Deactivate" : "Reactivate"} ${c.name}` }),
      action("Delete", async () => { await api("DELETE", `/consumers/${c.id}`); toast(`${c.name} deleted`); await show(); },
        { cls: "danger", ariaLabel: `Delete ${c.name}`, confirmText: `Delete ${c.name}? Its key stops working at once; its history and statistics stay.` }))));
  // On a phone each consumer is a card: its facts, then its actions stacked, all on screen.
  const list = table("consumers", ["Name", "Key", "State", "Last used", ""], rows, { empty: "No consumers yet." });
  list.classList.add("stack");
  render(
    section("Consumers", searchBox("consumer-search", "Search consumers", list, { what: "consumers" }), list),
    section("New consumer",
      form([field("Name", "name", { maxlength: 255 })], "Create consumer", async (d) => {
        const c = await api("POST", "/consumers", { name: d.get("name") });
        await show(c);
      }, { id: "new-consumer" }),
      created ? secretOnce("new-key", `API key for ${created.name}`, created.api_key, "this API key") : ""),
    section("Access matrix", h("p", { class: "muted" }, "Each toggle saves at once."), matrix(consumers, engines, accessByEngine)));
}
