// The administrators' console: a client of the management API, one module per page.
// Routes are hashes (#/engines/<id>/jobs ...); each page module exports show(params).
import { ApiError, h, loading, render, session, api, view } from "./lib.js";
import { me, showChangePassword, showLogin } from "./auth.js";
import * as engines from "./engines.js";
import * as engine from "./engine.js";
import * as jobs from "./jobs.js";
import * as tenantJobs from "./tenant_jobs.js";
import * as stats from "./stats.js";
import * as consumers from "./consumers.js";
import * as users from "./users.js";
import * as settings from "./settings.js";
import * as fidelity from "./fidelity.js";
import * as schemas from "./schemas.js";
import * as tryit from "./tryit.js";
import * as diff from "./diff.js";
import * as replay from "./replay.js";

const ID = "([0-9a-f-]{36})";
const ROUTES = [
  [new RegExp(`^#/engines/${ID}/versions/${ID}/try$`), (m) => tryit.show(m[1], m[2])],
  [new RegExp(`^#/engines/${ID}/versions/${ID}/schemas$`), (m) => schemas.show(m[1], m[2])],
  [new RegExp(`^#/engines/${ID}/versions/${ID}/fidelity$`), (m) => fidelity.show(m[1], m[2])],
  [new RegExp(`^#/engines/${ID}/versions/${ID}/compare(?:/${ID})?$`), (m) => diff.show(m[1], m[2], m[3])],
  [new RegExp(`^#/engines/${ID}/versions/${ID}/replay(?:/${ID})?$`), (m) => replay.show(m[1], m[2], m[3])],
  [new RegExp(`^#/engines/${ID}/jobs/${ID}$`), (m) => jobs.showJob(m[1], m[2])],
  [new RegExp(`^#/engines/${ID}/jobs$`), (m) => jobs.show(m[1])],
  [new RegExp(`^#/engines/${ID}/(${engine.TABS.map(([k]) => k).join("|")})$`), (m) => engine.show(m[1], m[2])],
  [new RegExp(`^#/engines/${ID}$`), (m) => engine.show(m[1])],
  [/^#\/stats(?:\/(engine|consumer)\/([0-9a-f-]{36}))?$/, (m) => stats.show(m[1] || "tenant", m[2])],
  [/^#\/jobs$/, () => tenantJobs.show()],
  [/^#\/consumers$/, () => consumers.show()],
  [/^#\/users$/, () => users.show()],
  [/^#\/settings$/, () => settings.show()],
  [/^#\/engines$/, () => engines.show()],
];

// Why the session ended, said on the sign-in screen. The API answers "Not authenticated" when the
// browser sent no session (the cookie expired with it) and "Invalid or expired token" when the
// session it sent is no longer the user's live one: one session per user, so a sign-in elsewhere
// (or a password reset, or deactivation) ends this one.
function endedBecause(err) {
  if (!me.email) return "";
  if (err && err.message === "Invalid or expired token") {
    return "You were signed out because this account signed in somewhere else (one session at a time), or its password was reset. Log in again to continue.";
  }
  return "Your session has expired. Log in again to continue.";
}

// Changing the hash routes through hashchange; routing here as well would render the page twice.
const signedIn = () => { if (location.hash === "" || location.hash === "#/login") location.hash = "#/engines"; else route(); };
// Parallel requests of one page each meet the 401: the first one's sign-in screen stays.
session.onUnauthorized = (err) => { if (!document.getElementById("login")) showLogin(signedIn, endedBecause(err)); };
session.onPasswordChange = () => showChangePassword(signedIn);
session.onSignedOut = (notice) => showLogin(signedIn, notice);

function markNav(hash) {
  for (const a of document.querySelectorAll("#nav a")) {
    const here = hash.startsWith(a.getAttribute("href"));
    if (here) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
}

// The menu shows once a page has come from the API: never on the sign-in screens, not even
// for the moment a page takes to find out that the session has ended.
const showNav = () => { document.getElementById("nav").hidden = false; };

export async function route() {
  const hash = location.hash || "#/engines";
  markNav(hash);
  render(loading());
  try {
    const found = ROUTES.find(([re]) => re.test(hash));
    if (found) { await found[1](hash.match(found[0])); showNav(); }
    else { location.hash = "#/engines"; }
  } catch (x) {
    if (!(x instanceof ApiError) || (x.status !== 401 && !(x.status === 403 && x.message === "Password change required"))) {
      showNav();
      render(h("section", {}, h("h2", {}, "Something went wrong"), h("p", { class: "error", role: "alert" }, x.message),
        h("p", {}, h("a", { href: "#/engines" }, "Back to engines"))));
    }
  }
}

document.getElementById("logout").addEventListener("click", async () => {
  await api("POST", "/auth/logout").catch(() => {});
  me.email = "";
  showLogin(signedIn, "You are logged out.");
});
window.addEventListener("hashchange", route);
route();
export { view };
