// An engine's jobs: filter by status, page through, open one (its inputs and outputs in their
// shapes, as Try it shows them, the raw JSON a click away), download its workbook, see its
// webhook's delivery log and redeliver it; calculate a completed job again and compare.
import { action, ago, api, breadcrumbs, fmt, h, namedValues, render, section, table, toast, when } from "./lib.js";
import { fromJobButton } from "./tests.js";

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
      h("td", {}, j.version), h("td", {}, ago(j.created_at)), h("td", { class: "num" }, fmt(j.execution_time_ms)))),
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

// An exact time with how long ago it was.
const at = (iso) => (iso ? [when(iso), " (", ago(iso), ")"] : "—");

export async function showJob(engineId, jobId) {
  const [e, j] = await Promise.all([api("GET", `/engines/${engineId}`), api("GET", `/engines/${engineId}/jobs/${jobId}`)]);
  const dl = h("div", { id: "download" });
  const facts = [
    ["Status", h("span", { class: `status ${j.status}` }, j.status)],
    ["Run by", j.is_test ? "a test run" : j.consumer_name],
    ["Version", j.version],
    ["Created", at(j.created_at)], ["Completed", at(j.completed_at)],
    ["Execution time", j.execution_time_ms === null ? "—" : `${j.execution_time_ms} ms`],
    ["Version hash (SHA-256)", j.version_sha256 ? h("code", { class: "hash" }, j.version_sha256) : "not recorded"],
    ["Calculation engine", j.calc_engine || (j.status === "completed" ? "not recorded" : "—")],
    ["Webhook", j.webhook_url ? `${j.webhook_url} → ${j.webhook_sent_at ? (j.webhook_response_status === 0 ? "no answer (connection failed or timed out)" : `HTTP ${j.webhook_response_status}`) : "not sent yet"}` : "none"],
  ];
  render(breadcrumbs({ label: "Engines", href: "#/engines" }, { label: e.name, href: `#/engines/${engineId}` }, { label: "Jobs", href: `#/engines/${engineId}/jobs` }, { label: jobId.slice(0, 8) }),
    section(`Job ${jobId.slice(0, 8)}`,
      h("dl", { class: "facts", id: "job-facts" }, facts.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
      j.error_message ? h("p", { class: "error", role: "alert" }, j.error_message) : "",
      j.status === "completed" ? [action("Download workbook", async () => { await downloadLink(engineId, jobId, dl); }, { cls: "primary" }), fromJobButton(engineId, jobId), dl] : ""),
    section("Inputs", namedValues("job-inputs", j.inputs)),
    section("Outputs", j.outputs ? namedValues("job-outputs", j.outputs) : h("p", { class: "muted" }, "None yet.")),
    j.status === "completed" ? rerunSection(engineId, jobId) : "",
    j.webhook_url ? webhookLog(engineId, jobId, j) : "");
}

// Calculate the job again in its own run context (its clock, its seed); nothing is stored.
function rerunSection(engineId, jobId) {
  const out = h("div", { id: "rerun-result", role: "status" });
  const same = (a, b) => (a === null ? "not recorded" : a === b ? "same" : "different");
  const show = (r) => {
    const verdict = r.error_message ? h("p", { class: "error", id: "rerun-verdict" }, `The re-run failed to calculate: ${r.error_message}`)
      : r.identical ? h("p", { class: "ok", id: "rerun-verdict" }, "Identical: every output came out exactly as the job recorded it.")
        : h("p", { class: "error", id: "rerun-verdict" }, `Different: ${r.differing_outputs.length} output${r.differing_outputs.length === 1 ? "" : "s"} changed (${r.differing_outputs.join(", ")}).`);
    const differing = !r.identical && r.differing_outputs.length
      ? table("rerun-differences", ["Output", "Recorded", "Re-run"], r.differing_outputs.map(n => h("tr", {}, h("td", {}, h("code", {}, n)),
        h("td", {}, h("code", {}, JSON.stringify((r.recorded_outputs || {})[n]))), h("td", {}, h("code", {}, JSON.stringify((r.outputs || {})[n])))))) : "";
    out.replaceChildren(verdict, differing,
      table("rerun-context", ["", "Job", "Re-run", "Compared"], [
        h("tr", {}, h("th", { scope: "row" }, "Version hash (SHA-256)"), h("td", {}, h("code", { class: "hash" }, r.recorded_version_sha256 || "not recorded")),
          h("td", {}, h("code", { class: "hash" }, r.version_sha256)), h("td", {}, same(r.recorded_version_sha256, r.version_sha256))),
        h("tr", {}, h("th", { scope: "row" }, "Calculation engine"), h("td", {}, r.recorded_calc_engine || "not recorded"),
          h("td", {}, r.calc_engine), h("td", {}, same(r.recorded_calc_engine, r.calc_engine)))]));
  };
  return section("Re-run",
    h("p", {}, "Calculate this job's inputs again on its version, with the job's clock (NOW, TODAY) and random seed, and compare the outputs. Nothing is stored: the job, its file and the statistics stay as they are."),
    action("Re-run", async () => { out.replaceChildren(); show(await api("POST", `/engines/${engineId}/jobs/${jobId}/rerun`)); }, { id: "rerun-job", cls: "primary" }), out);
}

// Every POST of the job's webhook, and a button for one more (never automatic).
function webhookLog(engineId, jobId, j) {
  const log = h("div", { id: "webhook-attempts" });
  const outcome = (a) => a.status_code === null ? (a.attempted_at ? "in flight" : "queued")
    : a.status_code === 0 ? `no answer (${a.error_class})` : `HTTP ${a.status_code}${a.error_class ? ` (${a.error_class})` : ""}`;
  const draw = (attempts) => log.replaceChildren(table("webhook-attempt-list", ["When", "Kind", "Outcome", "Time (ms)", "Answer (first 1 KB)"],
    attempts.map(a => h("tr", {},
      h("td", {}, a.attempted_at ? when(a.attempted_at) : `asked ${when(a.requested_at)}`),
      h("td", {}, a.redelivery ? "redelivery" : "first attempt"),
      h("td", {}, outcome(a)), h("td", { class: "num" }, fmt(a.duration_ms)),
      h("td", {}, a.response_excerpt ? h("code", {}, a.response_excerpt) : "—"))),
    { empty: "Not attempted yet." }));
  draw(j.webhook_attempts);
  const redeliver = action("Redeliver webhook", async () => {
    await api("POST", `/engines/${engineId}/jobs/${jobId}/webhook-redeliveries`);
    toast("Redelivery queued: it appears below once sent.");
    draw((await api("GET", `/engines/${engineId}/jobs/${jobId}`)).webhook_attempts);
  }, { id: "redeliver-webhook", confirmText: `POST this job's result to ${j.webhook_url} again?`, confirmLabel: "Redeliver" });
  return section("Webhook deliveries", log, j.webhook_sent_at ? redeliver : "");
}

export async function downloadLink(engineId, jobId, target) {
  const link = await api("GET", `/engines/${engineId}/jobs/${jobId}/download`);
  target.replaceChildren(h("a", { href: link.download_url, download: link.filename, id: "download-link" }, `Download ${link.filename}`),
    h("span", { class: "muted" }, ` (link valid until ${when(link.expires_at)})`));
  target.querySelector("a").focus();
}
