// An engine's page: a header with the engine's actions, then one tab at a time (each its own
// address, #/engines/<id>/<tab>): Overview, Versions, Schema, Code, Access, Tests, Settings.
import { exportButton } from "./transfer.js";
import { action, api, ago, breadcrumbs, fmt, h, isoDay, render, section, table, toast } from "./lib.js";
import { exampleInputs, snippets } from "./snippets.js";
import { fidelityWord, rangesTable, versionsTab } from "./engine_versions.js";
import { settingsTab } from "./engine_settings.js";
import { testsTab } from "./tests.js";

export const TABS = [["overview", "Overview"], ["versions", "Versions"], ["schema", "Schema"], ["code", "Code"], ["access", "Access"], ["tests", "Tests"], ["settings", "Settings"]];

// Remove a consumer's access to the engine outright (not four unticked boxes): its key can no
// longer reach the engine in any way.
export function removeGrant(engineId, engineName, consumerId, consumerName, after) {
  return action("Remove access", async () => {
    await api("DELETE", `/engines/${engineId}/access/${consumerId}`);
    toast(`${consumerName} has no access to ${engineName} any more`); await after();
  }, { cls: "danger", ariaLabel: `Remove ${consumerName}'s access to ${engineName}`, confirmLabel: "Remove",
    confirmText: `Remove all of ${consumerName}'s access to ${engineName}? Its key stops reaching this engine at once.` });
}

// The engine's OpenAPI contract (what its consumers get with a key), saved as a file.
function contractButton(id, slug) {
  return action("Download the OpenAPI contract", async () => {
    const doc = await api("GET", `/engines/${id}/openapi`);
    const url = URL.createObjectURL(new Blob([JSON.stringify(doc, null, 2)], { type: "application/json" }));
    const a = h("a", { href: url, download: `${slug}.openapi.json`, hidden: true });
    document.body.append(a); a.click(); a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  }, { id: "download-contract" });
}

async function overviewTab(e, active) {
  const since = isoDay(new Date(Date.now() - 6 * 86400000));
  const [stats, recent] = await Promise.all([api("GET", `/engines/${e.id}/stats?start_date=${since}`), api("GET", `/engines/${e.id}/jobs/recent?limit=5`)]);
  const facts = [
    ["Active version", active ? [active.version, " · ", h("a", { href: `#/engines/${e.id}/versions/${active.id}/fidelity` }, active.fidelity ? fidelityWord(active.fidelity) : "fidelity")]
      : h("span", { class: "warning" }, "none: consumers' calls are refused until a version is activated")],
    ["Versions", fmt(e.versions.length)],
    ["Consumers with access", fmt(e.consumers.length)],
    ["Calls (7 days)", fmt(stats.summary.total_calls)],
    ["Last call", recent.length ? ago(recent[0].created_at) : "never"],
    ["Only from listed addresses", e.ip_whitelist_enabled ? `yes (${(e.ip_whitelist || []).length})` : "no"],
  ];
  const rows = recent.map(j => h("tr", {},
    h("td", {}, h("a", { href: `#/engines/${e.id}/jobs/${j.job_id}` }, j.job_id.slice(0, 8))),
    h("td", {}, h("span", { class: `status ${j.status}` }, j.status)),
    h("td", {}, j.is_test ? h("em", {}, "test") : j.consumer_name), h("td", {}, j.version), h("td", {}, ago(j.created_at))));
  return [
    section("Overview", h("dl", { class: "facts", id: "engine-facts" }, facts.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]))),
    section("Recent jobs", table("recent-jobs", ["Job", "Status", "Run by", "Version", "Created"], rows, { empty: "No calls yet." }),
      h("p", {}, h("a", { href: `#/engines/${e.id}/jobs` }, "All jobs"))),
  ];
}

function schemaTab(e, latest) {
  if (!latest) return section("Named ranges", h("p", { class: "empty" }, "Upload a version to see its named ranges."));
  const declared = [latest.input_schema ? "an input schema" : "", latest.output_schema ? "an output schema" : ""].filter(Boolean).join(" and ");
  return section("Named ranges",
    h("p", { class: "muted" }, `Of version ${latest.version}${latest.is_active ? " (active)" : ""}: its inputs and outputs.`),
    rangesTable(latest),
    h("p", {}, declared ? `It declares ${declared}. ` : "It declares no schema yet: calls are checked against the ranges' shapes. ",
      h("a", { href: `#/engines/${e.id}/versions/${latest.id}/schemas` }, `Edit the schemas of version ${latest.version}`)));
}

function codeTab(e, active, tenant) {
  if (!active) return section("Use it from code", h("p", {}, "Activate a version to call the engine."));
  return section("Use it from code", snippets(tenant.slug, e, exampleInputs(active)),
    h("p", {}, "The engine's OpenAPI contract, to generate a typed client from (the same document its consumers get with a key):"), contractButton(e.id, e.slug));
}

function accessTab(e, refresh) {
  const rows = e.consumers.map(c => h("tr", { "data-consumer": c.consumer_name }, h("td", {}, c.consumer_name),
    ...["can_execute", "can_view_jobs", "can_download", "can_view_about"].map(f => h("td", {}, c[f] ? "yes" : "no")),
    h("td", {}, ago(c.last_used_at)),
    h("td", { class: "row-actions" }, removeGrant(e.id, e.name, c.consumer_id, c.consumer_name, refresh))));
  return section("Consumer access",
    table("access", ["Consumer", "Execute", "View jobs", "Download", "About", "Key last used", ""], rows, { empty: "No consumer has access yet." }),
    h("p", {}, h("a", { href: "#/consumers" }, "Grant or change access in the access matrix")));
}

// The tab shown for #/engines/<id>: the one last opened here, else Versions for an engine
// without any (uploading is what comes next), else the overview.
const tabKey = (id) => `engine.tab.${id}`;

export async function show(id, tab) {
  const [e, tenant] = await Promise.all([api("GET", `/engines/${id}`), api("GET", "/tenant/settings")]);
  tab = tab || sessionStorage.getItem(tabKey(id)) || (e.versions.length ? "overview" : "versions");
  sessionStorage.setItem(tabKey(id), tab);
  const refresh = () => show(id, tab);
  const active = e.versions.find(v => v.is_active);
  const latest = active || e.versions[0];
  const body = tab === "versions" ? versionsTab(e, refresh) : tab === "schema" ? schemaTab(e, latest) : tab === "code" ? codeTab(e, active, tenant)
    : tab === "access" ? accessTab(e, refresh) : tab === "settings" ? settingsTab(e, refresh)
    : tab === "tests" ? await testsTab(e, refresh) : await overviewTab(e, active);
  render(
    breadcrumbs({ label: "Engines", href: "#/engines" }, { label: e.name }),
    h("section", { class: "engine-head" }, h("h2", {}, e.name),
      h("p", {}, "Slug ", h("code", {}, e.slug), e.description ? ` · ${e.description}` : ""),
      h("div", { class: "actionbar", id: "engine-actions" },
        active ? h("a", { class: "button", href: `#/engines/${id}/versions/${active.id}/try` }, "Try the active version") : "",
        h("a", { class: "button secondary", href: `#/engines/${id}/versions` }, "Upload a version"),
        h("a", { class: "button secondary", href: `#/engines/${id}/jobs` }, "Jobs"),
        h("a", { class: "button secondary", href: `#/stats/engine/${id}` }, "Statistics"),
        exportButton(e)),
      h("nav", { class: "tabs", "aria-label": `Sections of ${e.name}` },
        TABS.map(([key, label]) => h("a", { href: `#/engines/${id}/${key}`, "aria-current": key === tab ? "page" : null }, label)))),
    body);
}
