// Copy-ready curl and Python for an engine: execute, poll, download, with its real URL; execute
// answered in one call (?wait=) with an Idempotency-Key; the engine's own OpenAPI contract.
import { copyButton, h } from "./lib.js";

export function snippets(tenantSlug, engine, exampleInputs) {
  const base = location.origin;
  const execUrl = `${base}/jobs/execute/${tenantSlug}/${engine.slug}`;
  const inputs = JSON.stringify({ inputs: exampleInputs });
  const body = `'${inputs.replace(/'/g, "'\\''")}'`;
  const curl = [
    `# Execute (202 and a job id)`,
    `curl -s -X POST '${execUrl}' \\`,
    `  -H 'X-API-Key: YOUR_API_KEY' -H 'Content-Type: application/json' \\`,
    `  -d ${body}`,
    ``,
    `# Poll the job until it is completed or failed`,
    `curl -s '${base}/jobs/JOB_ID' -H 'X-API-Key: YOUR_API_KEY'`,
    ``,
    `# A one-hour link to the filled workbook`,
    `curl -s '${base}/jobs/JOB_ID/download' -H 'X-API-Key: YOUR_API_KEY'`,
  ].join("\n");
  const oneCall = [
    `# The answer in one call: 200 with the finished job when it is done within 20 s (at most 25),`,
    `# else the usual 202 (then poll). Needs the key's view-jobs access too.`,
    `# Idempotency-Key: sending this request again with the same key within 24 hours answers with`,
    `# the first job instead of making another (one key per request you mean; reuse it to retry).`,
    `curl -s -X POST '${execUrl}?wait=20' \\`,
    `  -H 'X-API-Key: YOUR_API_KEY' -H 'Content-Type: application/json' \\`,
    `  -H 'Idempotency-Key: quote-0001' \\`,
    `  -d ${body}`,
  ].join("\n");
  const contract = [
    `# This engine's OpenAPI 3.1 contract (execute, poll, download, its input and output schemas),`,
    `# to generate a typed client from. Needs the key's about access.`,
    `curl -s '${base}/jobs/openapi/${tenantSlug}/${engine.slug}' -H 'X-API-Key: YOUR_API_KEY' > ${engine.slug}.json`,
    `openapi-python-client generate --path ${engine.slug}.json --meta none --output-path ${engine.slug.replace(/-/g, "_")}_client`,
  ].join("\n");
  const python = [
    `import time`,
    `import httpx`,
    ``,
    `# one connection for every call; a generous timeout, as a busy service may take seconds`,
    `client = httpx.Client(base_url="${base}", headers={"X-API-Key": "YOUR_API_KEY"}, timeout=30)`,
    ``,
    `job = client.post("/jobs/execute/${tenantSlug}/${engine.slug}",`,
    `                  json=${JSON.stringify({ inputs: exampleInputs })}).json()`,
    `delay = 1`,
    `while True:`,
    `    status = client.get(f"/jobs/{job['job_id']}").json()`,
    `    if status["status"] in ("completed", "failed"):`,
    `        break`,
    `    time.sleep(delay)`,
    `    delay = min(delay * 2, 15)`,
    `print(status.get("outputs") or status.get("error_message"))`,
    `link = client.get(f"/jobs/{job['job_id']}/download").json()`,
    `print(link["download_url"])`,
  ].join("\n");
  const block = (id, title, text) => h("div", { class: "snippet" },
    h("div", { class: "snippet-head" }, h("h3", {}, title), copyButton(text, `Copy ${title}`)),
    h("pre", { id }, h("code", {}, text)));
  return h("div", { id: "snippets" }, h("p", {}, "Call this engine's active version from your code. Use a consumer's API key with execute access."),
    block("snippet-curl", "curl", curl), block("snippet-wait", "Execute and wait (one call)", oneCall),
    block("snippet-openapi", "OpenAPI contract", contract), block("snippet-python", "Python", python));
}

// Example inputs from the input schema's examples/defaults, or from the named ranges' shapes.
export function exampleInputs(version) {
  const out = {};
  if (!version) return out;
  const props = (version.input_schema && version.input_schema.properties) || null;
  if (props) {
    for (const [k, s] of Object.entries(props)) {
      out[k] = s.default ?? (s.examples && s.examples[0]) ?? (s.enum ? s.enum[0] : s.type === "string" ? (s.format === "date" ? "2026-01-31" : "text") : s.type === "array" ? [] : s.type === "boolean" ? true : 1);
    }
    return out;
  }
  for (const r of version.named_ranges.filter(n => n.kind === "input")) {
    const one = r.is_date ? "2026-01-31" : 1;
    out[r.name] = r.rows === 1 && r.cols === 1 ? one : (r.rows === 1 || r.cols === 1) ? Array(r.rows * r.cols).fill(one) : Array(r.rows).fill(Array(r.cols).fill(one));
  }
  return out;
}
