// Sign-in and the forced password change. The session lives in the HttpOnly auth_token cookie
// that /auth/login sets; the console keeps only the signed-in email (to mark "you" in Users).
import { api, field, form, h, render } from "./lib.js";

export const me = {
  get email() { return sessionStorage.getItem("sheetcalc.email") || ""; },
  set email(v) { if (v) sessionStorage.setItem("sheetcalc.email", v); else sessionStorage.removeItem("sheetcalc.email"); },
};

// The sign-in screen; ``notice`` says why it is shown (a session that ended, a password changed).
export function showLogin(onSignedIn, notice = "") {
  document.getElementById("nav").hidden = true;
  me.email = "";
  render(h("section", { class: "narrow" }, h("h2", {}, "Log in"),
    notice ? h("p", { class: "notice", id: "login-notice", role: "status" }, notice) : "",
    form([field("Email", "email", { type: "email", autocomplete: "username" }),
          field("Password", "password", { type: "password", autocomplete: "current-password" })], "Log in", async (d) => {
      const email = d.get("email");
      const r = await api("POST", "/auth/login", { email, password: d.get("password") });
      me.email = email;
      if (r.must_change_password) showChangePassword(onSignedIn, d.get("password"));
      else onSignedIn();
    }, { id: "login" })));
}

// The API's refusal of a password change, beside the password it is about.
export function passwordProblem(x) {
  if (/^Current password/.test(x.message)) x.fields = { current_password: x.message };
  else if (/^New password/.test(x.message)) x.fields = { new_password: x.message };
  return x;
}

export function showChangePassword(onSignedIn, current = "") {
  document.getElementById("nav").hidden = true;
  render(h("section", { class: "narrow" }, h("h2", {}, "Choose a new password"),
    h("p", {}, "Your password is temporary. Choose a new one (at least 8 characters) to continue."),
    form([field("Current password", "current_password", { type: "password", value: current, autocomplete: "current-password" }),
          field("New password", "new_password", { type: "password", minlength: 8, autocomplete: "new-password" })],
      "Change password", async (d) => {
        try { await api("POST", "/auth/change-password", { current_password: d.get("current_password"), new_password: d.get("new_password") }); }
        catch (x) { throw passwordProblem(x); }
        showLogin(onSignedIn, "Password changed. Log in with your new password.");
      })));
}
