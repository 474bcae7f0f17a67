// Users: list, create (temporary password shown once), deactivate, reset password, delete.
// The signed-in user's own row cannot be changed (the API refuses it too).
import { action, api, field, form, h, render, secretOnce, section, table, toast, when } from "./lib.js";
import { me } from "./auth.js";

export async function show(shown) {
  const { users } = await api("GET", "/users");
  const rows = users.map(u => {
    const own = u.email === me.email.toLowerCase();
    return h("tr", { "data-user": u.email },
      h("td", {}, u.email, own ? h("span", { class: "badge" }, "you") : ""),
      h("td", {}, u.is_active ? (u.must_change_password ? "must change password" : "active") : h("span", { class: "muted" }, "deactivated")),
      h("td", {}, when(u.last_login_at)),
      h("td", { class: "row-actions" }, own ? h("span", { class: "muted" }, "Your own account cannot be changed here.") : [
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
  render(
    section("Users", table("users", ["Email", "State", "Last login", ""], rows)),
    section("New user",
      form([field("Email", "email", { type: "email" })], "Create user", async (d) => {
        const r = await api("POST", "/users", { email: d.get("email") });
        await show({ title: `Temporary password for ${r.user.email}`, value: r.temporary_password });
      }, { id: "new-user" }),
      shown ? secretOnce("temp-password", shown.title, shown.value, "this temporary password") : ""));
}
