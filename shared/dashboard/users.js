// Users: list, create (temporary password shown once), change e-mail, deactivate, reset
// password, delete. The signed-in user's own row cannot be changed there (the API refuses it
// too); "Your account" changes their own password.
import { action, ago, api, field, form, formDialog, h, render, secretOnce, section, session, table, toast } from "./lib.js";
import { me, passwordProblem } from "./auth.js";
import { searchBox, searchable } from "./filter.js";

function changeEmail(u) {
  formDialog(`Change the e-mail of ${u.email}`, [field("New e-mail", "email", { type: "email", value: u.email, autocomplete: "off" })], "Save e-mail", async (d) => {
    let r;
    try { r = await api("PATCH", `/users/${u.id}`, { email: d.get("email") }); }
    catch (x) { if (x.status === 409) x.fields = { email: x.message }; throw x; }
    toast(`${u.email} is now ${r.user ? r.user.email : d.get("email")}`);
    await show();
  }, { id: "change-email" });
}

// Your own password: the API ends the session, so the sign-in screen follows.
function yourAccount() {
  return section("Your account",
    h("p", {}, "Signed in as ", h("strong", {}, me.email || "you"), ". Changing your password ends this session: you log in again with the new one."),
    form([field("Current password", "current_password", { type: "password", autocomplete: "current-password" }),
          field("New password", "new_password", { type: "password", minlength: 8, autocomplete: "new-password", hint: "At least 8 characters." })],
      "Change your password", async (d) => {
        try { await api("POST", "/auth/change-password", { current_password: d.get("current_password"), new_password: d.get("new_password") }); }
        catch (x) { throw passwordProblem(x); }
        session.onSignedOut("Password changed. Log in with your new password.");
      }, { id: "own-password" }));
}

export async function show(shown) {
  const { users } = await api("GET", "/users");
  const rows = users.map(u => {
    const own = u.email === me.email.toLowerCase();
    return h("tr", { "data-user": u.email, "data-search": searchable(u.email) },
      h("td", { "data-label": "Email" }, u.email, own ? h("span", { class: "badge" }, "you") : ""),
      h("td", { "data-label": "State" }, u.is_active ? (u.must_change_password ? "must change password" : "active") : h("span", { class: "muted" }, "deactivated")),
      h("td", { "data-label": "Last login" }, ago(u.last_login_at)),
      h("td", { class: "row-actions" }, own ? h("span", { class: "muted" }, "Your own account: change your password under Your account.") : [
        h("button", { type: "button", class: "secondary", "aria-label": `Change the e-mail of ${u.email}`, onclick: () => changeEmail(u) }, "Change e-mail"),
        action(u.is_active ? "Deactivate" : "Reactivate", async () => {
          await api("PATCH", `/users/${u.id}`, { is_active: !u.is_active }); toast(`${u.email} ${u.is_active ? "deactivated" : "reactivated"}`); await show();
        }, { ariaLabel: `${u.is_active ? "Deactivate" : "Reactivate"} ${u.email}` }),
        action("Reset password", async () => {
          const r = await api("PATCH", `/users/${u.id}`, { reset_password: true });
          await show({ title: `New temporary password for ${u.email}`, value: r.temporary_password });
        }, { ariaLabel: `Reset password of ${u.email}`, confirmText: `Reset the password of ${u.email}? Their session ends at once.`, confirmLabel: "Reset" }),
        action("Delete", async () => { await api("DELETE", `/users/${u.id}`); toast(`${u.email} deleted`); await show(); },
          { cls: "danger", ariaLabel: `Delete ${u.email}`, confirmText: `Delete the user ${u.email}?` }),
      ]));
  });
  const list = table("users", ["Email", "State", "Last login", ""], rows);
  list.classList.add("stack");
  render(
    section("Users", searchBox("user-search", "Search by e-mail", list, { what: "users" }), list),
    section("New user",
      form([field("Email", "email", { type: "email" })], "Create user", async (d) => {
        let r;
        try { r = await api("POST", "/users", { email: d.get("email") }); }
        catch (x) { if (x.status === 409) x.fields = { email: x.message }; throw x; }
        await show({ title: `Temporary password for ${r.user.email}`, value: r.temporary_password });
      }, { id: "new-user" }),
      shown ? secretOnce("temp-password", shown.title, shown.value, "this temporary password") : ""),
    yourAccount());
}
