// The tenant's jobs on every engine (GET /tenant/jobs): a search by engine or consumer (or a job
// id), a status and an engine filter, paged; each job opens on its engine's job page.
import { ago, api, fmt, h, render, section, table, toast } from "./lib.js";

const PAGE = 20;
const STATUSES = ["", "pending", "processing", "completed", "failed"];
const KEPT = "jobs.tenant"; // the filter, kept for the session

export async function show() {
  const engines = await api("GET", "/engines");
  const kept = JSON.parse(sessionStorage.getItem(KEPT) || "{}");
  const filter = { q: kept.q || "", status: kept.status || "", engine: engines.some(e => e.id === kept.engine) ? kept.engine : "" };
  let offset = 0;
  let asked = 0; // the latest request: an older answer arriving late is dropped
  const list = h("div", { id: "tenant-job-list" });
  const counter = h("p", { class: "muted", id: "tenant-job-count", role: "status" });
  const prev = h("button", { type: "button", class: "secondary", onclick: () => turn(-PAGE) }, "Previous");
  const next = h("button", { type: "button", class: "secondary", onclick: () => turn(PAGE) }, "Next");

  async function load() {
    const mine = ++asked;
    list.setAttribute("aria-busy", "true");
    const q = new URLSearchParams({ limit: PAGE, offset });
    if (filter.q.trim()) q.set("q", filter.q.trim());
    if (filter.status) q.set("status", filter.status);
    if (filter.engine) q.set("engine_id", filter.engine);
    const page = await api("GET", `/tenant/jobs?${q}`);
    if (mine !== asked) return;
    list.removeAttribute("aria-busy");
    const filtered = filter.q.trim() || filter.status || filter.engine;
    const cell = (label, ...content) => h("td", { "data-label": label }, content);
    const jobs = table("tenant-jobs", ["Job", "Engine", "Status", "Consumer", "Version", "Created", "Time (ms)"], page.jobs.map(j => h("tr", {},
      cell("Job", h("a", { href: `#/engines/${j.engine_id}/jobs/${j.job_id}` }, j.job_id.slice(0, 8))),
      cell("Engine", j.engine_name),
      cell("Status", h("span", { class: `status ${j.status}` }, j.status)),
      cell("Consumer", j.is_test ? h("em", {}, "test") : j.consumer_name),
      cell("Version", j.version), cell("Created", ago(j.created_at)), h("td", { "data-label": "Time (ms)", class: "num" }, fmt(j.execution_time_ms)))),
      { empty: filtered ? "No jobs match these filters." : "No jobs yet." });
    jobs.classList.add("stack"); // a card per job on a phone
    list.replaceChildren(jobs);
    const last = Math.min(offset + page.jobs.length, page.total);
    counter.textContent = page.total ? `${offset + 1}–${last} of ${page.total}` : "";
    prev.disabled = offset === 0; next.disabled = last >= page.total;
  }
  async function turn(step) {
    const before = offset;
    offset = Math.max(0, offset + step);
    try { await load(); } catch (x) { offset = before; toast(x.message); }
  }
  const changed = (name) => async (event) => {
    filter[name] = event.target.value;
    sessionStorage.setItem(KEPT, JSON.stringify(filter));
    offset = 0;
    try { await load(); } catch (x) { toast(x.message); }
  };
  let typing;
  const search = h("input", { type: "search", id: "tenant-job-search", value: filter.q, autocomplete: "off", spellcheck: "false",
    oninput: (event) => { clearTimeout(typing); typing = setTimeout(() => changed("q")(event), 250); } });
  const status = h("select", { id: "tenant-job-status", onchange: changed("status") },
    STATUSES.map(s => h("option", { value: s, selected: s === filter.status }, s || "all")));
  const engine = h("select", { id: "tenant-job-engine", onchange: changed("engine") },
    h("option", { value: "" }, "all engines"), engines.map(e => h("option", { value: e.id, selected: e.id === filter.engine }, e.name)));
  render(section("Jobs",
    h("p", { class: "muted" }, "Every engine's jobs, newest first. Search by engine, consumer or job id."),
    h("div", { class: "toolbar search" },
      h("span", { class: "control" }, h("label", { for: "tenant-job-search" }, "Search"), search),
      h("span", { class: "control" }, h("label", { for: "tenant-job-status" }, "Status"), status),
      h("span", { class: "control" }, h("label", { for: "tenant-job-engine" }, "Engine"), engine)),
    list, h("div", { class: "pager" }, prev, counter, next)));
  await load();
}
