// Statistics: tenant, engine and consumer views over a date range: calls per day, success
// rate, latency (average, p50, p95, p99) and sortable breakdowns.
import { api, breadcrumbs, field, fmt, form, h, isoDay, render, section, sortableTable } from "./lib.js";
import { callsChart } from "./chart.js";

const rangeKey = "stats.range";
function range() {
  const saved = JSON.parse(sessionStorage.getItem(rangeKey) || "null");
  if (saved) return saved;
  return { start: isoDay(new Date(Date.now() - 29 * 86400000)), end: isoDay(new Date()) };
}

const pct = (v) => (v === null || v === undefined ? "—" : `${fmt(v)}%`);
// The API answers 0 for a period without calls; a rate of nothing is not 0%.
const rate = (s) => (s.total_calls ? pct(s.success_rate) : "no calls");
const ms = (v) => (v === null || v === undefined ? "—" : `${fmt(v)} ms`);

function summaryCards(s) {
  const cards = [["Calls", fmt(s.total_calls)], ["Successful", fmt(s.successful_calls)], ["Failed", fmt(s.failed_calls)],
    ["Success rate", rate(s)], ["Average", ms(s.avg_execution_time_ms)]];
  if ("p50_execution_time_ms" in s) cards.push(["p50", ms(s.p50_execution_time_ms)], ["p95", ms(s.p95_execution_time_ms)], ["p99", ms(s.p99_execution_time_ms)]);
  if ("test_calls" in s) cards.push(["Test calls", fmt(s.test_calls)]);
  return h("dl", { class: "cards", id: "summary" }, cards.map(([k, v]) => h("div", { class: "card" }, h("dt", {}, k), h("dd", {}, v))));
}

const counts = [
  { label: "Calls", key: "total_calls", num: true }, { label: "Successful", key: "successful_calls", num: true },
  { label: "Failed", key: "failed_calls", num: true }, { label: "Success rate", key: "success_rate", num: true, render: rate },
  { label: "Average", key: "avg_execution_time_ms", num: true, render: (r) => ms(r.avg_execution_time_ms) },
];

export async function show(kind, id) {
  const r = range();
  const q = new URLSearchParams({ start_date: r.start, end_date: r.end });
  const path = kind === "engine" ? `/engines/${id}/stats` : kind === "consumer" ? `/consumers/${id}/stats` : "/tenant/stats";
  const data = await api("GET", `${path}?${q}`);
  const title = kind === "engine" ? `Statistics of ${data.engine_name}` : kind === "consumer" ? `Statistics of ${data.consumer_name}` : "Statistics";
  const picker = form([
    field("From", "start", { type: "date", value: r.start }), field("To", "end", { type: "date", value: r.end }),
  ], "Show", async (d) => {
    if (d.get("start") > d.get("end")) { const x = new Error("The start date is after the end date."); x.fields = { start: "after the end date" }; throw x; }
    sessionStorage.setItem(rangeKey, JSON.stringify({ start: d.get("start"), end: d.get("end") }));
    await show(kind, id);
  }, { id: "range" });
  picker.classList.add("inline");
  const byEngine = data.by_engine && sortableTable("by-engine", [
    { label: "Engine", key: "engine_name", render: (x) => x.is_deleted ? `${x.engine_name} (deleted)` : h("a", { href: `#/stats/engine/${x.engine_id}` }, x.engine_name) }, ...counts], data.by_engine, { empty: "No calls." });
  const byConsumer = data.by_consumer && sortableTable("by-consumer", [
    { label: "Consumer", key: "consumer_name", render: (x) => x.is_archived ? `${x.consumer_name} (deleted)` : h("a", { href: `#/stats/consumer/${x.consumer_id}` }, x.consumer_name) }, ...counts], data.by_consumer, { empty: "No consumer calls." });
  const byVersion = data.by_version && sortableTable("by-version", [
    { label: "Version", key: "version", render: (x) => `${x.version}${x.is_active ? " (active)" : ""}${x.is_deleted ? " (deleted)" : ""}` }, ...counts], data.by_version, { empty: "No calls." });
  render(
    kind === "tenant" ? "" : breadcrumbs({ label: "Statistics", href: "#/stats" }, { label: kind === "engine" ? data.engine_name : data.consumer_name }),
    section(title, picker, summaryCards(data.summary)),
    section("Calls per day", callsChart(data.by_day, r.start, r.end)),
    byEngine ? section("By engine", byEngine) : "",
    byConsumer ? section("By consumer", byConsumer) : "",
    byVersion ? section("By version", byVersion) : "");
}
