// Calls per day as an inline SVG bar chart (successful and failed stacked): no chart library,
// so nothing to load, and it draws under the console's strict Content-Security-Policy.
import { h } from "./lib.js";

export function callsChart(byDay, start, end) {
  // One bar per day in the period, days without calls included.
  const days = [];
  const seen = Object.fromEntries(byDay.map(d => [d.date, d]));
  const first = new Date(`${start}T00:00:00Z`), last = new Date(`${end}T00:00:00Z`);
  for (let d = first; d <= last && days.length < 400; d = new Date(d.getTime() + 86400000)) {
    const key = d.toISOString().slice(0, 10);
    days.push(seen[key] || { date: key, total_calls: 0, successful_calls: 0, failed_calls: 0 });
  }
  const W = 720, H = 220, left = 40, bottom = 24, top = 10;
  const highest = Math.max(0, ...days.map(d => d.successful_calls + d.failed_calls + Math.max(0, d.total_calls - d.successful_calls - d.failed_calls)));
  const ticks = niceTicks(highest);
  const max = ticks[ticks.length - 1];
  const bw = (W - left - 4) / Math.max(1, days.length);
  const y = (v) => top + (H - top - bottom) * (1 - v / max);
  const bars = days.map((d, i) => {
    const x = left + i * bw + bw * 0.1, w = Math.max(1, bw * 0.8);
    const ok = d.successful_calls, bad = d.failed_calls;
    return h("g", { class: "day", "data-date": d.date },
      h("title", {}, `${d.date}: ${d.total_calls} calls, ${ok} successful, ${bad} failed`),
      h("rect", { x, y: y(ok), width: w, height: Math.max(0, y(0) - y(ok)), class: "ok", fill: "#2e7d4f" }),
      h("rect", { x, y: y(ok + bad), width: w, height: Math.max(0, y(ok) - y(ok + bad)), class: "failed", fill: "#c0392b" }));
  });
  const grid = ticks.map(v => h("g", { class: "tick" },
    h("line", { x1: left, x2: W, y1: y(v), y2: y(v), stroke: "#dde3ea" }),
    h("text", { x: left - 6, y: y(v) + 4, "text-anchor": "end", "font-size": 11, fill: "#4a5663" }, String(v))));
  const labels = days.length ? [0, days.length - 1].map(i => h("text", { x: left + i * bw + bw / 2, y: H - 6, "text-anchor": i ? "end" : "start", "font-size": 11, fill: "#4a5663" }, days[i].date)) : [];
  const total = days.reduce((s, d) => s + d.total_calls, 0);
  return h("figure", { class: "chart" },
    h("svg", { id: "calls-chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": `Calls per day from ${start} to ${end}: ${total} calls` }, grid, bars, labels),
    h("figcaption", {}, h("span", { class: "key key-ok" }, "successful"), " ", h("span", { class: "key key-failed" }, "failed"), ` · ${total} calls`));
}

// The y axis's labels: whole numbers from 0 in one round step (1, 2 or 5 times a power of ten),
// at most 5 of them, the last at or above ``highest``: 0 1 2 3, 0 5 10 15 20 25, 0 20 40 60.
export function niceTicks(highest) {
  const top = Math.max(1, Math.ceil(highest));
  let step = 1;
  for (let power = 1; ; power *= 10) {
    const found = [1, 2, 5].map(m => m * power).find(s => Math.ceil(top / s) <= 4);
    if (found) { step = found; break; }
  }
  return Array.from({ length: Math.ceil(top / step) + 1 }, (_, i) => i * step);
}
