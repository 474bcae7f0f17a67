// The first-run checklist on the Engines page: the six steps from a new tenant to a first call,
// each ticked from the tenant's real state (never from what this browser remembers), shown until
// every step is done.
import { api, h } from "./lib.js";

// Whether any engine has an uploaded version (an active one is; others are asked one by one).
async function anyVersion(engines) {
  if (engines.some(e => e.active_version)) return true;
  for (const e of engines) if ((await api("GET", `/engines/${e.id}`)).versions.length) return true;
  return false;
}

// Whether an active consumer may execute an engine that has an active version.
async function anyGrant(engines, consumers) {
  const active = new Set(consumers.filter(c => c.is_active).map(c => c.id));
  for (const e of engines.filter(x => x.active_version)) {
    if ((await api("GET", `/engines/${e.id}/access`)).some(a => a.can_execute && active.has(a.consumer_id))) return true;
  }
  return false;
}

export async function state(engines) {
  const consumers = await api("GET", "/consumers");
  const done = { engine: engines.length > 0 };
  done.upload = done.engine && await anyVersion(engines);
  done.activate = engines.some(e => e.active_version);
  done.consumer = consumers.length > 0;
  done.key = done.activate && done.consumer && await anyGrant(engines, consumers);
  done.call = consumers.some(c => c.last_used_at);
  return done;
}

// The checklist, or nothing once every step is done.
export async function checklist(engines) {
  const done = await state(engines);
  const first = engines.find(e => e.active_version) || engines[0];
  const engineLink = (label) => (first ? h("a", { href: `#/engines/${first.id}` }, label) : null);
  const focusNewEngine = h("button", { type: "button", class: "secondary", onclick: () => document.querySelector("#new-engine input").focus() }, "New engine");
  const steps = [
    ["engine", "Create an engine: a name for the calculation your consumers will call.", focusNewEngine],
    ["upload", "Upload a version: an .xlsx workbook whose named ranges are its inputs and outputs.", engineLink("Upload a workbook")],
    ["activate", "Activate a version: the one consumers' calls run on. Try it first if you like.", engineLink("Activate it")],
    ["consumer", "Create a consumer: an application that calls your engines, with its own API key.", h("a", { href: "#/consumers" }, "New consumer")],
    ["key", "Let the consumer's key execute the engine, in the access matrix.", h("a", { href: "#/consumers" }, "Grant access")],
    ["call", "Make a first call with the consumer's key, from the snippets on the engine's page.", engineLink("See the snippets")],
  ];
  const count = steps.filter(([k]) => done[k]).length;
  if (count === steps.length) return "";
  return h("section", { id: "first-run", "aria-labelledby": "first-run-title" },
    h("h2", { id: "first-run-title" }, "Get started"),
    h("p", { class: "muted", id: "first-run-count" }, `${count} of ${steps.length} steps done.`),
    h("ol", { class: "checklist" }, steps.map(([key, text, act]) => h("li", { "data-step": key, class: done[key] ? "done" : "todo" },
      h("span", { class: "sr-only" }, done[key] ? "Done: " : "To do: "), text, " ", done[key] ? "" : act))));
}
