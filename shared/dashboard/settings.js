// Settings: the tenant's name; document storage (SharePoint through Microsoft Graph): the app
// registration's client id, tenant id and secret (masked), test connection, pick a site and a
// document library; the copy status of each version.
import { action, api, field, form, h, render, section, table, toast, when } from "./lib.js";

const MASK = "********";

async function copies() {
  const engines = await api("GET", "/engines");
  const details = await Promise.all(engines.map(e => api("GET", `/engines/${e.id}`)));
  return details.flatMap(e => e.versions.map(v => ({ engine: e, version: v })));
}

export async function show() {
  const [s, versions] = await Promise.all([api("GET", "/tenant/settings"), copies()]);
  const result = h("div", { id: "storage-result", role: "status" });
  const picker = h("div", { id: "storage-picker" });

  async function choose(body, what) {
    await api("PUT", "/tenant/settings", body);
    toast(`${what} saved`);
    await show();
  }

  async function discoverSites() {
    const sites = await api("POST", "/tenant/storage/discover-sites");
    const select = h("select", { id: "site-select" }, sites.map(x => h("option", { value: x.id, selected: x.id === s.site_id }, x.display_name || x.name || x.id)));
    const drives = h("div", { id: "drives" });
    picker.replaceChildren(
      h("label", { for: "site-select" }, "SharePoint site"), select,
      action("Show document libraries", async () => {
        const list = await api("POST", `/tenant/storage/discover-drives/${encodeURIComponent(select.value)}`);
        const dsel = h("select", { id: "drive-select" }, list.map(d => h("option", { value: d.id, selected: d.id === s.drive_id }, d.name || d.id)));
        const site = sites.find(x => x.id === select.value);
        drives.replaceChildren(h("label", { for: "drive-select" }, "Document library"), dsel,
          list.length ? action("Use this library", async () => {
            const d = list.find(x => x.id === dsel.value);
            await choose({ site_id: site.id, site_name: site.display_name || site.name, drive_id: d.id, drive_name: d.name }, "Document library");
          }, { cls: "primary" }) : h("p", {}, "This site has no document libraries."));
      }), drives);
    if (!sites.length) picker.replaceChildren(h("p", {}, "No SharePoint sites were found for these credentials."));
  }

  const storageForm = form([
    field("Client (application) ID", "client_id", { value: s.client_id || "", required: false }),
    field("Directory (tenant) ID", "tenant_id", { value: s.tenant_id || "", required: false }),
    field("Client secret", "client_secret", { type: "password", value: s.client_secret || "", required: false, autocomplete: "off",
      hint: s.client_secret ? "A secret is stored; it is never shown. Leave the mask to keep it, or type a new one." : "" }),
  ], "Save credentials", async (d) => {
    const body = { client_id: d.get("client_id") || null, tenant_id: d.get("tenant_id") || null };
    const secret = d.get("client_secret");
    if (secret && secret !== MASK) body.client_secret = secret;
    await api("PUT", "/tenant/settings", body);
    toast("Document storage credentials saved");
    await show();
  }, { id: "storage" });

  const rows = versions.map(({ engine, version }) => {
    const st = version.document_storage;
    return h("tr", {}, h("td", {}, h("a", { href: `#/engines/${engine.id}` }, engine.name)), h("td", {}, version.version),
      h("td", {}, st ? st.status.replace("_", " ") : "—"),
      h("td", {}, st && st.web_url ? h("a", { href: st.web_url, rel: "noopener" }, st.path || "open") : st && st.error ? h("span", { class: "error" }, st.error) : st && st.path ? st.path : ""),
      h("td", {}, st && st.stored_at ? when(st.stored_at) : ""));
  });

  render(
    section("Settings",
      form([field("Tenant name", "name", { value: s.name, maxlength: 255 })], "Save name", async (d) => {
        await api("PUT", "/tenant/settings", { name: d.get("name") }); toast("Name saved");
      }, { id: "tenant-name" }),
      h("p", { class: "muted" }, "Tenant slug ", h("code", {}, s.slug), " (part of every consumer URL).")),
    section("Document storage (SharePoint)",
      h("p", {}, "Each uploaded version is also copied to a SharePoint document library. Register an app in Microsoft Entra ID with the Sites.ReadWrite.All application permission and enter it here."),
      storageForm,
      s.storage_configured ? [
        h("div", { class: "actions" },
          action("Test connection", async () => {
            const r = await api("POST", "/tenant/test-storage-connection");
            result.replaceChildren(h("p", { class: r.success ? "ok" : "error" }, r.message, r.error ? `: ${r.error}` : ""));
          }),
          action("Discover sites", discoverSites)),
        result,
        h("p", { id: "chosen-drive" }, s.drive_id ? ["Copies go to ", h("strong", {}, s.drive_name || s.drive_id), " on ", h("strong", {}, s.site_name || s.site_id), "."] : "No document library chosen yet: discover the sites and pick one."),
        picker,
      ] : h("p", { class: "muted" }, "Save the three credentials to test the connection and pick a library.")),
    section("Copies of each version", table("copies", ["Engine", "Version", "Copy", "Where", "Stored"], rows, { empty: "No versions yet." })));
}
