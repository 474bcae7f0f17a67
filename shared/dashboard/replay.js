// Replay: the active version's recorded production jobs calculated again on this version, in a
// worker; nothing of it reaches consumers or statistics. Choose how many and the tolerance,
// follow its progress, read the report: counts, per output the spread of the differences, and
// the most changed cases with their inputs and both outputs.
import { api, breadcrumbs, field, fmt, form, h, render, section, table, toast, when } from "./lib.js";

const POLL_MS = 1000;
let polling = null;
const stopPolling = () => { if (polling) { clearTimeout(polling); polling = null; } };
const shown = (v) => (v === null || v === undefined ? "—" : typeof v === "object" ? JSON.stringify(v) : fmt(v));
const tol = (t) => [t.absolute !== null ? `± ${fmt(t.absolute)}` : "", t.relative !== null ? `± ${fmt(t.relative * 100)}%` : ""].filter(Boolean).join(" or ") || "exact";

function askForm(engineId, versionId, after) {
  return form([
    field("Jobs to replay", "count", { type: "number", min: 1, max: 10000, step: 1, value: 1000,
      hint: "The active version's last completed production jobs, 1 to 10,000." }),
    field("Absolute tolerance", "absolute", { type: "number", min: 0, step: "any", required: false, hint: "Leave both empty to compare exactly." }),
    field("Relative tolerance", "relative", { type: "number", min: 0, step: "any", required: false, hint: "A fraction: 0.001 is 0.1%. Test cases' tolerances take precedence for their outputs." }),
  ], "Start replay", async (d) => {
    const tolerance = {};
    if (d.get("absolute") !== "") tolerance.absolute = Number(d.get("absolute"));
    if (d.get("relative") !== "") tolerance.relative = Number(d.get("relative"));
    const r = await api("POST", `/engines/${engineId}/versions/${versionId}/replays`, { count: Number(d.get("count")), tolerance });
    toast("Replay started");
    await after(r.id);
  }, { id: "replay-form" });
}

function counts(r) {
  const rep = r.report;
  return h("dl", { class: "cards", id: "replay-counts" },
    [["Cases", rep.total], ["Identical", rep.identical], ["Within tolerance", rep.within], ["Changed", rep.changed], ["Failed", rep.failed]]
      .map(([k, n]) => h("div", { class: "card", "data-count": k.toLowerCase() }, h("dt", {}, k), h("dd", {}, fmt(n)))));
}

function outputsTable(rep) {
  return table("replay-outputs", ["Output", "Tolerance", "Identical", "Within", "Changed", "Moved", "Min", "Median", "Max"],
    Object.entries(rep.outputs).map(([name, o]) => h("tr", { "data-output": name },
      h("td", {}, h("code", {}, name)), h("td", {}, `${tol(o.tolerance)} (${o.tolerance.source === "test_cases" ? "test cases" : "this replay"})`),
      h("td", { class: "num" }, fmt(o.identical)), h("td", { class: "num" }, fmt(o.within)), h("td", { class: "num" }, fmt(o.changed)),
      h("td", { class: "num" }, fmt(o.differences.count)), h("td", { class: "num" }, shown(o.differences.min)),
      h("td", { class: "num" }, shown(o.differences.median)), h("td", { class: "num" }, shown(o.differences.max)))),
    { empty: "No output was compared." });
}

function casesTable(rep) {
  return table("replay-cases", ["Job", "Verdict", "Outputs moved", "Inputs", "Recorded", "This version"],
    rep.most_changed.map(c => h("tr", {}, h("td", {}, h("code", {}, c.job_id.slice(0, 8))), h("td", {}, c.verdict),
      h("td", {}, c.outputs_moved.join(", ")), h("td", {}, h("code", {}, JSON.stringify(c.inputs))),
      h("td", {}, h("code", {}, JSON.stringify(Object.fromEntries(c.outputs_moved.map(n => [n, c.recorded[n]]))))),
      h("td", {}, h("code", {}, JSON.stringify(Object.fromEntries(c.outputs_moved.map(n => [n, c.candidate[n]]))))))),
    { empty: "No case changed." });
}

function progressOf(r) {
  if (r.status === "failed") return h("p", { class: "error", id: "replay-status" }, `The replay failed: ${r.error || "unknown error"}.`);
  if (r.status !== "completed") {
    return [h("p", { id: "replay-status", role: "status" }, `${r.status === "queued" ? "Queued" : "Running"}: ${fmt(r.processed)} of ${fmt(r.total)} jobs replayed.`),
      h("progress", { max: Math.max(r.total, 1), value: r.processed, "aria-label": "Replay progress" })];
  }
  return h("p", { id: "replay-status", class: r.report.changed || r.report.failed ? "warning" : "ok" },
    `Replayed ${fmt(r.report.total)} jobs of version ${r.baseline_version}: ${fmt(r.report.identical)} identical, ${fmt(r.report.within)} within tolerance, ${fmt(r.report.changed)} changed, ${fmt(r.report.failed)} failed.`);
}

function replayView(r) {
  if (r.status !== "completed") return [progressOf(r)];
  const rep = r.report;
  return [progressOf(r), counts(r), h("h4", {}, "Per output"), outputsTable(rep),
    h("h4", {}, "Most changed cases"), casesTable(rep),
    rep.failures.length ? [h("h4", {}, "Cases this version could not calculate"),
      table("replay-failures", ["Job", "Inputs", "Error"], rep.failures.map(f => h("tr", {}, h("td", {}, h("code", {}, f.job_id.slice(0, 8))),
        h("td", {}, h("code", {}, JSON.stringify(f.inputs))), h("td", {}, f.error))))] : ""];
}

export async function show(engineId, versionId, replayId) {
  stopPolling();
  const [e, list] = await Promise.all([api("GET", `/engines/${engineId}`), api("GET", `/engines/${engineId}/versions/${versionId}/replays`)]);
  const v = e.versions.find(x => x.id === versionId);
  const current = replayId || (list[0] && list[0].id);
  const target = h("div", { id: "replay-report" });
  const history = table("replays", ["Started", "Of version", "Status", "Jobs", "Identical", "Within", "Changed", "Failed"],
    list.map(r => h("tr", { "data-replay": r.id }, h("td", {}, h("a", { href: `#/engines/${engineId}/versions/${versionId}/replay/${r.id}` }, when(r.created_at))),
      h("td", {}, r.baseline_version), h("td", {}, r.status), h("td", { class: "num" }, `${fmt(r.processed)} / ${fmt(r.total)}`),
      ...["identical", "within", "changed", "failed"].map(k => h("td", { class: "num" }, r.counts ? fmt(r.counts[k]) : "—")))),
    { empty: "No replay yet." });
  const active = e.versions.find(x => x.is_active);
  render(
    breadcrumbs({ label: "Engines", href: "#/engines" }, { label: e.name, href: `#/engines/${engineId}/versions` }, { label: `Replay on version ${v.version}` }),
    section(`Replay on version ${v.version}`,
      h("p", {}, active ? `Calculates the inputs of version ${active.version}'s recent completed production jobs on version ${v.version} and compares the outputs. Consumers see nothing of it, and it is not counted in statistics.`
        : "The engine has no active version, so there are no production jobs to replay."),
      active ? askForm(engineId, versionId, (id) => { location.hash = `#/engines/${engineId}/versions/${versionId}/replay/${id}`; }) : ""),
    section("Report", target),
    section("Replays of this version", history));
  if (!current) { target.replaceChildren(h("p", {}, "No replay yet.")); return; }
  const follow = async () => {
    if (!document.body.contains(target)) return;  // the page was left
    const r = await api("GET", `/engines/${engineId}/versions/${versionId}/replays/${current}`);
    target.replaceChildren(...[replayView(r)].flat(3).filter(Boolean));
    if (r.status === "queued" || r.status === "running") polling = setTimeout(follow, POLL_MS);
  };
  await follow();
}
