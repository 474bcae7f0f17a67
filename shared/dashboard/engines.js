// Engines: the first-run checklist (until every step is done), the list (active version, last
// call, calls in the last 7 days, a search by name or slug) and "new engine".
import { checklist } from "./checklist.js";
import { searchBox, searchable } from "./filter.js";
import { SLUG_PATTERN, SLUG_RULE, ago, api, field, fmt, form, h, isoDay, render, section, table } from "./lib.js";
import { importSection } from "./transfer.js";

async function activity(e) {
  const since = isoDay(new Date(Date.now() - 6 * 86400000));
  const [stats, recent] = await Promise.all([
    api("GET", `/engines/${e.id}/stats?start_date=${since}`).catch(() => null),
    api("GET", `/engines/${e.id}/jobs/recent?limit=1`).catch(() => []),
  ]);
  return { calls7: stats ? stats.summary.total_calls : null, last: recent.length ? recent[0].created_at : null };
}

export async function show() {
  const engines = await api("GET", "/engines");
  const [facts, firstRun] = await Promise.all([Promise.all(engines.map(activity)), checklist(engines)]);
  const rows = engines.map((e, i) => h("tr", { "data-search": searchable(e.name, e.slug) },
    h("td", {}, h("a", { href: `#/engines/${e.id}` }, e.name)),
    h("td", {}, h("code", {}, e.slug)),
    h("td", {}, e.active_version ? e.active_version.version : h("span", { class: "muted" }, "none")),
    h("td", {}, ago(facts[i].last)),
    h("td", { class: "num" }, fmt(facts[i].calls7))));
  const list = table("engines", ["Name", "Slug", "Active version", "Last call", "Calls (7 days)"], rows, { empty: "No engines yet." });
  render(
    firstRun,
    section("Engines", searchBox("engine-search", "Search engines", list, { what: "engines" }), list),
    section("New engine",
      form([field("Name", "name", { maxlength: 255 }),
            field("Slug (optional)", "slug", { required: false, pattern: SLUG_PATTERN, patternMessage: SLUG_RULE, hint: "Lower-case letters, digits and hyphens; made from the name when left empty." }),
            field("Description", "description", { required: false })],
        "Create engine", async (d) => {
          let e;
          try { e = await api("POST", "/engines", { name: d.get("name"), slug: d.get("slug") || null, description: d.get("description") || null }); }
          catch (x) { if (x.status === 409) x.fields = { slug: d.get("slug") ? x.message : `${x.message}: choose a slug` }; throw x; }
          location.hash = `#/engines/${e.id}`;
        }, { id: "new-engine" })),
    importSection());
}
