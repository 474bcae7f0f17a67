// Activating a version through the release gate (its verdict shown, an override with a reason
// when it refuses), and the engine's release history with a rollback to the version replaced.
import { action, api, ago, field, formDialog, h, section, table, toast } from "./lib.js";

// A version's latest test run in a few words.
export function testsWord(t) {
  if (!t) return "—";
  if (t.status === "pending") return "running";
  return t.failed ? `${t.failed} of ${t.total} failed` : `${t.passed} of ${t.total} passed`;
}

// Activate ``v``: at once when the gate allows it; otherwise a dialog with the gate's reasons and
// an override reason, which activates it anyway and is recorded in the history.
export async function activateVersion(engineId, v, after) {
  const verdict = await api("GET", `/engines/${engineId}/versions/${v.id}/gate`);
  if (verdict.allowed) {
    await api("POST", `/engines/${engineId}/versions/${v.id}/activate`);
    toast(`Version ${v.version} is active`); await after();
    return;
  }
  formDialog(`The release gate refuses version ${v.version}`, [
    h("ul", { class: "warnings", id: "gate-reasons" }, verdict.reasons.map(r => h("li", { "data-code": r.code }, r.message))),
    h("p", {}, "Fix what it names (run the tests again from the Tests tab), or activate it anyway: the reason is kept in the release history."),
    field("Reason for activating anyway", "override_reason", { type: "textarea", maxlength: 2000, rows: 3 }),
  ], "Activate anyway", async (d) => {
    await api("POST", `/engines/${engineId}/versions/${v.id}/activate`, { override_reason: String(d.get("override_reason")) });
    toast(`Version ${v.version} is active (gate overridden)`); await after();
  }, { id: "override-activation" });
}

// The release history, newest first; the newest can be rolled back to the version it replaced.
export async function releasesSection(e, after) {
  const history = await api("GET", `/engines/${e.id}/releases`);
  const rows = history.map((r, i) => {
    const previous = i === 0 && r.previous_version_id ? e.versions.find(v => v.id === r.previous_version_id) : null;
    return h("tr", { "data-release": r.version },
      h("td", {}, ago(r.activated_at)),
      h("td", {}, r.version),
      h("td", {}, r.previous_version || "—"),
      h("td", {}, r.activated_by_email || "—"),
      h("td", {}, r.test_run ? h("span", { class: `status ${r.test_run.status === "passed" ? "completed" : r.test_run.status}` }, testsWord(r.test_run)) : "not run"),
      h("td", {}, r.replay ? (r.replay.summary || r.replay.status || "replayed") : "—"),
      h("td", {}, r.override_reason ? [h("strong", {}, "Overridden: "), r.override_reason] : "—"),
      h("td", { class: "row-actions" }, previous && !previous.is_active
        ? action(`Roll back to ${previous.version}`, () => activateVersion(e.id, previous, after), { id: "rollback" }) : ""));
  });
  return section("Releases",
    table("releases", ["When", "Version", "Replaced", "By", "Tests", "Replay", "Override", ""], rows, { empty: "No version has been activated yet." }));
}
