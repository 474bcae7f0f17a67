// An engine's jobs: filter by status, page through, open one, download its workbook.
import { action, api, breadcrumbs, fmt, h, render, section, table, toast, when } from "./lib.js";

const PAGE = 20;
const STATUSES = ["", "pending", "processing", "completed", "failed"];

export async function show(engineId) {
  const e = await api("GET", `/engines/${engineId}`);
  let status = sessionStorage.getItem(`jobs.status.${engineId}`) || "";
  let offset = 0;
  const list = h("div", { id: "job-list" });
  const counter = h("p", { class: "muted", id: "job-count", role: "status" });
  // Plain buttons: load() decides whether each is enabled (an action() would re-enable itself).
  const turn = (step) => async () => {
    const before = offset;
    offset = Math.max(0, offset + step);
    try { await load(); } catch (x) { offset = before; toast(x.message); }
  };
  const prev = h("button", { type: "button", class: "secondary", onclick: turn(-PAGE) }, "Previous");
  const next = h("button", { type: "button", class: "secondary", onclick: turn(PAGE) }, "Next");
  const select = h("select", { id: "status-filter", onchange: async () => { status = select.value; sessionStorage.setItem(`jobs.status.${engineId}`, status); offset = 0; await load(); } },
    STATUSES.map(s => h("option", { value: s, selected: s === status }, s || "all")));
  async function load() {
    list.setAttribute("aria-busy", "true");
    const q = new URLSearchParams({ limit: PAGE, offset });
    if (status) q.set("status", status);
    const page = await api("GET", `/engines/${engineId}/jobs?${q}`);
    list.removeAttribute("aria-busy");
    list.replaceChildren(table("jobs", ["Job", "Status", "Consumer", "Version", "Created", "Time (ms)"], page.jobs.map(j => h("tr", {},
      h("td", {}, h("a", { href: `#/engines/${engineId}/jobs/${j.job_id}` }, j.job_id.slice(0, 8))),
      h("td", {}, h("span", { class: `status ${j.status}` }, j.status)),
      h("td", {}, j.is_test ? h("em", {}, "test") : j.consumer_name),
      h("td", {}, j.version), h("td", {}, when(j.created_at)), h("td", { class: "num" }, fmt(j.execution_time_ms)))),
      { empty: status ? `No ${status} jobs.` : "No jobs yet." }));
    const last = Math.min(offset + page.jobs.length, page.total);
    counter.textContent = page.total ? `${offset + 1}–${last} of ${page.total}` : "";
    prev.disabled = offset === 0; next.disabled = last >= page.total;
  }
  render(breadcrumbs({ label: "Engines", href: "#/engines" }, { label: e.name, href: `#/engines/${engineId}` }, { label: "Jobs" }),
    section(`Jobs of ${e.name}`,
      h("div", { class: "toolbar" }, h("label", { for: "status-filter" }, "Status "), select),
      list, h("div", { class: "pager" }, prev, counter, next)));
  await load();
}

const json = (v) => h("pre", { class: "json" }, JSON.stringify(v, null, 2));

export async function showJob(engineId, jobId) {
  const [e, j] = await Promise.all([api("GET", `/engines/${engineId}`), api("GET", `/engines/${engineId}/jobs/${jobId}`)]);
  const dl = h("div", { id: "download" });
  const facts = [
    ["Status", h("span", { class: `status ${j.status}` }, j.status)],
    ["Run by", j.is_test ? "a test run" : j.consumer_name],
    ["Version", j.version],
    ["Created", when(j.created_at)], ["Completed", j.completed_at ? when(j.completed_at) : "—"],
    ["Execution time", j.execution_time_ms === null ? "—" : `${j.execution_time_ms} ms`],
    ["Webhook", j.webhook_url ? `${j.webhook_url} → ${j.webhook_sent_at ? (j.webhook_response_status === 0 ? "no answer (connection failed or timed out)" : `HTTP ${j.webhook_response_status}`) : "not sent yet"}` : "none"],
  ];
  render(breadcrumbs({ label: "Engines", href: "#/engines" }, { label: e.name, href: `#/engines/${engineId}` }, { label: "Jobs", href: `#/engines/${engineId}/jobs` }, { label: jobId.slice(0, 8) }),
    section(`Job ${jobId.slice(0, 8)}`,
      h("dl", { class: "facts", id: "job-facts" }, facts.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
      j.error_message ? h("p", { class: "error", role: "alert" }, j.error_message) : "",
      j.status === "completed" ? [action("Download workbook", async () => { await downloadLink(engineId, jobId, dl); }, { cls: "primary" }), dl] : ""),
    section("Inputs", json(j.inputs)),
    section("Outputs", j.outputs ? json(j.outputs) : h("p", { class: "muted" }, "None yet.")));
}

export async function downloadLink(engineId, jobId, target) {
  const link = await api("GET", `/engines/${engineId}/jobs/${jobId}/download`);
  target.replaceChildren(h("a", { href: link.download_url, download: link.filename, id: "download-link" }, `Download ${link.filename}`),
    h("span", { class: "muted" }, ` (link valid until ${when(link.expires_at)})`));
  target.querySelector("a").focus();
}
