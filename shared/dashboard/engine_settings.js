// An engine's Settings tab: name, slug, description and the IP whitelist; the danger zone
// (deleting the engine).
import { SLUG_PATTERN, SLUG_RULE, action, api, checkbox, field, form, h, section, toast } from "./lib.js";

// IPv4/IPv6 addresses or CIDR ranges, as the API accepts them; the server has the last word.
export function ipProblem(entry) {
  const [addr, bits, extra] = entry.split("/");
  if (extra !== undefined) return "has more than one '/'";
  const v4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/.test(addr);
  let v6 = false;
  if (!v4 && addr.includes(":")) { try { v6 = new URL(`http://[${addr}]/`).hostname.length > 2; } catch { v6 = false; } }
  if (!v4 && !v6) return "is not an IPv4 or IPv6 address";
  if (bits !== undefined && !(/^\d{1,3}$/.test(bits) && +bits <= (v4 ? 32 : 128))) return `has a prefix length that is not 0 to ${v4 ? 32 : 128}`;
  return null;
}

function whitelistField(engine) {
  const box = field("Allowed addresses (one per line)", "ip_whitelist", { type: "textarea", required: false, rows: 4,
    value: (engine.ip_whitelist || []).join("\n"), hint: "Addresses or CIDR ranges, e.g. 203.0.113.7 or 10.0.0.0/8 or 2001:db8::/32." });
  const area = box.querySelector("textarea");
  const err = box.querySelector(".field-error");
  area.addEventListener("input", () => {
    const bad = area.value.split(/\n/).map(s => s.trim()).filter(Boolean).map(s => [s, ipProblem(s)]).filter(([, p]) => p);
    err.textContent = bad.map(([s, p]) => `'${s}' ${p}`).join("; ");
    if (bad.length) area.setAttribute("aria-invalid", "true"); else area.removeAttribute("aria-invalid");
  });
  return box;
}

export function settingsTab(e, refresh) {
  const settingsForm = form([
    field("Name", "name", { value: e.name, maxlength: 255 }),
    field("Slug", "slug", { value: e.slug, pattern: SLUG_PATTERN, patternMessage: SLUG_RULE, hint: "Changing it changes the consumer URLs." }),
    field("Description", "description", { value: e.description || "", required: false }),
    checkbox("Only allow calls from the addresses below", "ip_whitelist_enabled", e.ip_whitelist_enabled),
    whitelistField(e),
  ], "Save settings", async (d) => {
    const list = String(d.get("ip_whitelist") || "").split(/\n/).map(s => s.trim()).filter(Boolean);
    const bad = list.filter(ipProblem);
    if (bad.length) { const x = new Error(`Fix the allowed addresses: ${bad.join(", ")}`); x.fields = { ip_whitelist: `${bad.map(s => `'${s}' ${ipProblem(s)}`).join("; ")}` }; throw x; }
    try {
      await api("PATCH", `/engines/${e.id}`, { name: d.get("name"), slug: d.get("slug"), description: d.get("description") || null,
        ip_whitelist_enabled: d.get("ip_whitelist_enabled") === "on", ip_whitelist: list });
    } catch (x) { if (x.status === 409) x.fields = { slug: x.message }; throw x; }
    toast("Settings saved"); await refresh();
  }, { id: "engine-settings" });
  return [
    section("Settings", settingsForm),
    h("section", { class: "danger-zone", id: "danger-zone", "aria-labelledby": "danger-zone-title" }, h("h3", { id: "danger-zone-title" }, "Danger zone"),
      h("p", {}, "Deleting the engine removes its versions, access and stored workbooks; its consumers' calls to it stop at once. Its jobs and statistics stay."),
      action("Delete engine", async () => { await api("DELETE", `/engines/${e.id}`); toast(`${e.name} deleted`); location.hash = "#/engines"; },
        { cls: "danger", confirmText: `Delete the engine ${e.name}? This cannot be undone.` })),
  ];
}
