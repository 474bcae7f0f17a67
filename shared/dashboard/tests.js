// An engine's Tests tab: its test cases (add one, import CSV or JSON lines, enable, disable,
// delete), a run on a version with each output's expected value, the value got and the
// difference, and the release history. A completed job's page makes a case of it in one click.
import { action, api, field, fmt, form, h, section, table, toast } from "./lib.js";
import { releasesSection, testsWord } from "./releases.js";

const POLL_MS = 1000;
// JSON in brief, spaced after its commas so that a table cell can wrap it.
const brief = (value) => { const s = JSON.stringify(value).replace(/,/g, ", "); return s.length > 70 ? `${s.slice(0, 67)}…` : s; };
const bound = (b) => [b.absolute != null ? `± ${b.absolute}` : "", b.relative != null ? `± ${b.relative * 100}%` : ""].filter(Boolean).join(" or ");
const tolerances = (t) => Object.entries(t || {}).map(([k, b]) => `${k} ${bound(b)}`).join("; ") || "exact";

// "Make it a test case" on a completed job's page: its inputs and outputs become a case.
export function fromJobButton(engineId, jobId) {
  return action("Make it a test case", async () => {
    const c = await api("POST", `/engines/${engineId}/test-cases/from-job/${jobId}`);
    toast(`Test case "${c.name}" added`);
    location.hash = `#/engines/${engineId}/tests`;
  }, { id: "make-test-case" });
}

function parsed(d, name, fallback) {
  const text = String(d.get(name) || "").trim();
  if (!text) return fallback;
  try { return JSON.parse(text); } catch { throw Object.assign(new Error("Not valid JSON"), { fields: { [name]: "Not valid JSON" } }); }
}

function casesSection(e, cases, refresh) {
  const rows = cases.map(c => h("tr", { "data-case": c.name },
    h("td", {}, c.name), h("td", {}, h("code", {}, brief(c.inputs))), h("td", {}, h("code", {}, brief(c.expected))),
    h("td", {}, tolerances(c.tolerances)), h("td", {}, c.enabled ? "yes" : "no"),
    h("td", { class: "row-actions" },
      action(c.enabled ? "Disable" : "Enable", async () => {
        await api("PATCH", `/engines/${e.id}/test-cases/${c.id}`, { enabled: !c.enabled }); await refresh();
      }, { ariaLabel: `${c.enabled ? "Disable" : "Enable"} ${c.name}` }),
      action("Delete", async () => { await api("DELETE", `/engines/${e.id}/test-cases/${c.id}`); toast(`Test case "${c.name}" deleted`); await refresh(); },
        { cls: "danger", confirmText: `Delete the test case "${c.name}"?`, ariaLabel: `Delete ${c.name}` }))));
  return section("Test cases",
    h("p", { class: "muted" }, "Every version uploaded is run against the enabled cases; while one fails, activating it needs a reason."),
    table("test-cases", ["Name", "Inputs", "Expected", "Tolerance", "Enabled", ""], rows,
      { empty: "No test cases yet. Add one below, import a file, or make one from a completed job's page." }));
}

function addSection(e, refresh) {
  return [h("h3", {}, "Add a test case"), form([
    field("Name", "name", { required: false, maxlength: 255 }),
    field("Inputs (JSON)", "inputs", { type: "textarea", rows: 3, value: "{}", hint: 'For example {"principal": 250000, "years": 30}' }),
    field("Expected outputs (JSON)", "expected", { type: "textarea", rows: 3, hint: 'For example {"monthly_payment": 1266.71}' }),
    field("Tolerances (JSON)", "tolerances", { type: "textarea", rows: 2, required: false,
      hint: 'Optional, per output: {"monthly_payment": {"absolute": 0.005}}. Without one a number must be identical; text is always exact.' }),
  ], "Add test case", async (d) => {
    const body = { inputs: parsed(d, "inputs", {}), expected: parsed(d, "expected", null), tolerances: parsed(d, "tolerances", null) };
    const name = String(d.get("name") || "").trim();
    if (name) body.name = name;
    const c = await api("POST", `/engines/${e.id}/test-cases`, body);
    toast(`Test case "${c.name}" added`); await refresh();
  }, { id: "add-test-case" })];
}

function importSection(e, refresh) {
  return [h("h3", {}, "Import test cases"),
    h("p", { class: "muted" }, "A CSV file: one column per input, expected.<output> for each output to check, optionally tolerance.<output>.absolute or .relative and case.name. Or JSON lines: one case per line."),
    form([field("File (.csv or .jsonl)", "file", { type: "file", accept: ".csv,.jsonl,.ndjson" })], "Import", async (d) => {
      const r = await api("POST", `/engines/${e.id}/test-cases/import`, d);
      toast(`${r.imported} test cases imported`); await refresh();
    }, { id: "import-test-cases" })];
}

function resultsTable(run) {
  const rows = run.results.flatMap(c => c.outputs.map((o, i) => h("tr", { class: o.verdict, "data-case": c.name, "data-output": o.name },
    h("td", {}, i === 0 ? c.name : ""), h("td", {}, h("code", {}, o.name)),
    h("td", { class: "num" }, typeof o.expected === "object" ? brief(o.expected) : fmt(o.expected)),
    h("td", { class: "num" }, o.missing ? "missing" : typeof o.got === "object" && o.got !== null ? brief(o.got) : fmt(o.got)),
    h("td", { class: "num" }, o.difference === null ? "—" : String(o.difference)),
    h("td", {}, h("span", { class: `status ${o.verdict === "changed" ? "failed" : "completed"}` }, o.verdict),
      c.error && i === 0 ? h("small", { class: "error" }, ` ${c.error}`) : ""))));
  return table("test-results", ["Case", "Output", "Expected", "Got", "Difference", "Verdict"], rows, { empty: "The run had no cases." });
}

function runSection(e, cases) {
  const out = h("div", { id: "test-run", role: "status" });
  const newest = e.versions[e.versions.length - 1];
  const select = h("select", { id: "test-version", onchange: () => load() },
    [...e.versions].reverse().map(v => h("option", { value: v.id, selected: newest && v.id === newest.id }, `${v.version}${v.is_active ? " (active)" : ""}`)));
  const show = (run) => out.replaceChildren(
    h("p", { id: "test-verdict" }, h("strong", {}, run.status === "pending" ? "Running…" : run.status === "passed" ? "Passed: " : "Failed: "),
      run.status === "pending" ? "" : testsWord(run), run.error ? h("span", { class: "error" }, ` ${run.error}`) : ""),
    run.status === "pending" ? "" : resultsTable(run));
  async function load() {
    if (!select.value) return;
    try { show(await api("GET", `/engines/${e.id}/versions/${select.value}/test-runs/latest`)); }
    catch (x) { if (x.status === 404) out.replaceChildren(h("p", { class: "muted" }, "No test run on this version yet.")); else throw x; }
  }
  const run = action("Run tests", async () => {
    let r = await api("POST", `/engines/${e.id}/versions/${select.value}/test-runs`);
    show(r);
    while (r.status === "pending" && out.isConnected) {
      await new Promise(done => setTimeout(done, POLL_MS));
      r = await api("GET", `/engines/${e.id}/versions/${select.value}/test-runs/latest`);
      show(r);
    }
  }, { cls: "primary", id: "run-tests" });
  if (!e.versions.length) return section("Test runs", h("p", { class: "empty" }, "Upload a version to run the tests on."));
  load().catch(x => out.replaceChildren(h("p", { class: "error" }, x.message)));
  return section("Test runs", h("div", { class: "toolbar" }, h("label", { for: "test-version" }, "Version "), select, cases.some(c => c.enabled) ? run : ""), out);
}

export async function testsTab(e, refresh) {
  const [cases, releases] = await Promise.all([api("GET", `/engines/${e.id}/test-cases`), releasesSection(e, refresh)]);
  return [casesSection(e, cases, refresh), runSection(e, cases), section("More test cases", addSection(e, refresh), importSection(e, refresh)), releases];
}
