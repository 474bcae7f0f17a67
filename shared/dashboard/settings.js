// Settings: the tenant's name; document storage (SharePoint through Microsoft Graph): the app
// registration's client id, tenant id and secret (masked), test connection, pick a site and a
// document library; the copy status of each version; the webhook signing secret (reveal once, rotate).
import { action, api, field, form, h, render, secretOnce, section, table, toast, when } from "./lib.js";

const MASK = "********";

async function copies() {
  const engines = await api("GET", "/engines");
  const details = await Promise.all(engines.map(e => api("GET", `/engines/${e.id}`)));
  return details.flatMap(e => e.versions.map(v => ({ engine: e, version: v })));
}

// The secret that signs the tenant's webhooks. The API shows it once (the first read, then each
// rotation), so the page reads it only when asked: opening Settings never uses up the reveal.
function signingSecret() {
  const out = h("div", { id: "signing-secret-result", role: "status" });
  const previous = (s) => s.previous_expires_at
    ? h("p", { id: "previous-secret" }, "The previous secret also signs until ", h("strong", {}, when(s.previous_expires_at)),
      " (a second v1= in Sheetcalc-Signature), so receivers still holding it keep verifying while you switch.")
    : "";
  const shown = (s, title) => {
    out.replaceChildren(secretOnce("signing-secret", title, s.secret, "the signing secret"), previous(s));
    out.querySelector("button.copy").focus();
  };
  const reveal = action("Reveal signing secret", async () => {
    const s = await api("GET", "/tenant/webhook-signing-secret");
    if (s.secret) return shown(s, "Webhook signing secret");
    out.replaceChildren(h("p", { class: "warning", id: "signing-secret-shown" },
      `The signing secret was shown already (made ${when(s.created_at)}${s.rotated_at ? `, last rotated ${when(s.rotated_at)}` : ""}); it is never shown twice. Lost it? Rotate to make a new one.`),
      previous(s));
  }, { id: "reveal-signing-secret" });
  const rotate = action("Rotate signing secret", async () => {
    shown(await api("POST", "/tenant/webhook-signing-secret/rotate"), "New webhook signing secret");
    toast("Signing secret rotated");
  }, { id: "rotate-signing-secret", confirmLabel: "Rotate",
    confirmText: "Make a new webhook signing secret? For 24 hours the current one signs too (rotating again within them drops it at once); after that only the new one does." });
  return section("Webhook signing secret",
    h("p", {}, "Every webhook POST carries ", h("code", {}, "Sheetcalc-Signature: t=<unix seconds>,v1=<hex>"),
      ": the HMAC-SHA256, keyed with this secret, of ", h("code", {}, "<t>.<raw body>"), "."),
    h("div", { class: "actions" }, reveal, rotate), out,
    h("p", { class: "muted", id: "signing-how-to" }, "How to verify: the guide's page “Signed webhooks and the delivery log” (/guide/consumers/webhooks/) has a verify function in Python, JavaScript and the shell. Check the raw bytes before parsing them, and refuse a t far from your clock."));
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
            result.replaceChildren();
            const r = await api("POST", "/tenant/test-storage-connection");
            result.replaceChildren(h("p", { class: r.success ? "ok" : "error" }, r.message, r.error ? `: ${r.error}` : ""));
          }),
          action("Discover sites", discoverSites)),
        result,
        h("p", { id: "chosen-drive" }, s.drive_id ? ["Copies go to ", h("strong", {}, s.drive_name || s.drive_id), " on ", h("strong", {}, s.site_name || s.site_id), "."] : "No document library chosen yet: discover the sites and pick one."),
        picker,
      ] : h("p", { class: "muted" }, "Save the three credentials to test the connection and pick a library.")),
    signingSecret(),
    section("Copies of each version", table("copies", ["Engine", "Version", "Copy", "Where", "Stored"], rows, { empty: "No versions yet." })));
}
