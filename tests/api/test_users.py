"""The tenant's users: list, create, change, delete; nobody touches their own account."""

from __future__ import annotations

import uuid

import pytest

from tests.factories import create_tenant, make_admin

USER_FIELDS = {"id", "email", "is_active", "must_change_password", "last_login_at", "created_at"}


def login(client, email: str, password: str):
    r = client.post("/auth/login", json={"email": email, "password": password})
    client.cookies.clear()
    return r


def add_user(admin, local: str = "analyst") -> dict:
    r = admin.post("/users", json={"email": f"{local}@{admin.slug}.example.com"})
    assert r.status_code == 201, r.text
    return r.json()


def test_the_list_shows_every_user_of_the_tenant_oldest_first(admin):
    # GIVEN a tenant with only its administrator
    r = admin.get("/users")
    assert r.status_code == 200
    body = r.json()
    assert body["total"] == 1 and len(body["users"]) == 1
    me = body["users"][0]
    assert set(me) == USER_FIELDS
    assert (me["id"] is not None, me["email"], me["is_active"], me["must_change_password"]) == (True, admin.email, True, False)
    assert me["last_login_at"] is not None
    # WHEN two more users are added
    add_user(admin, "first")
    add_user(admin, "second")
    # THEN the list has all three, oldest first
    body = admin.get("/users").json()
    assert body["total"] == 3
    assert [u["email"].split("@")[0] for u in body["users"]] == ["admin", "first", "second"]


def test_creating_a_user_shows_the_temporary_password_once(client, admin):
    # WHEN the administrator adds a colleague (typing the address in capitals)
    r = admin.post("/users", json={"email": f"  New.Person@{admin.slug.upper()}.Example.com "})
    # THEN the colleague exists, lower-cased, with a temporary password shown in the answer
    assert r.status_code == 201
    body = r.json()
    assert set(body) == {"user", "temporary_password", "message"}
    user = body["user"]
    assert set(user) == USER_FIELDS
    assert user["email"] == f"new.person@{admin.slug}.example.com"
    assert (user["is_active"], user["must_change_password"], user["last_login_at"]) == (True, True, None)
    assert len(body["temporary_password"]) >= 12 and "only once" in body["message"]
    # AND the list never shows the password
    assert body["temporary_password"] not in admin.get("/users").text
    # AND the colleague can log in with it, and must change it first
    r = login(client, user["email"], body["temporary_password"])
    assert r.status_code == 200 and r.json()["must_change_password"] is True


@pytest.mark.parametrize("email", ["not-an-email", "two@@signs.example", "spaces in@x.example", "nodot@localhost"])
def test_an_invalid_email_is_refused(admin, email):
    r = admin.post("/users", json={"email": email})
    assert (r.status_code, r.json()) == (422, {"detail": "Invalid email address"})


def test_a_malformed_create_body_is_a_validation_error(admin):
    for body in ({}, {"email": ""}, {"email": "a@" + "b" * 320 + ".example"}):
        r = admin.post("/users", json=body)
        assert r.status_code == 422 and isinstance(r.json()["detail"], list), body


def test_emails_are_unique_across_the_service(client, admin):
    taken = {"detail": "A user with this email already exists"}
    # GIVEN a user of this tenant and an administrator of another tenant
    add_user(admin, "taken")
    other = create_tenant()
    # THEN neither address can be used again, whatever the case
    r = admin.post("/users", json={"email": f"TAKEN@{admin.slug}.example.com"})
    assert (r.status_code, r.json()) == (409, taken)
    r = admin.post("/users", json={"email": other["email"]})
    assert (r.status_code, r.json()) == (409, taken)
    assert admin.get("/users").json()["total"] == 2


def test_changing_a_users_email(client, admin):
    # GIVEN a colleague
    created = add_user(admin, "old")
    uid = created["user"]["id"]
    new_email = f"renamed@{admin.slug}.example.com"
    # WHEN the administrator changes their address
    r = admin.patch(f"/users/{uid}", json={"email": new_email})
    # THEN the answer shows it, and no password
    assert r.status_code == 200
    assert r.json() == {
        "user": {**created["user"], "email": new_email},
        "temporary_password": None,
        "message": "User updated.",
    }
    # AND the colleague logs in with the new address only
    assert login(client, created["user"]["email"], created["temporary_password"]).status_code == 401
    assert login(client, new_email, created["temporary_password"]).status_code == 200


def test_email_change_errors(admin):
    uid = add_user(admin, "one")["user"]["id"]
    add_user(admin, "two")
    r = admin.patch(f"/users/{uid}", json={"email": f"two@{admin.slug}.example.com"})
    assert (r.status_code, r.json()) == (409, {"detail": "A user with this email already exists"})
    r = admin.patch(f"/users/{uid}", json={"email": "nope"})
    assert (r.status_code, r.json()) == (422, {"detail": "Invalid email address"})
    r = admin.patch(f"/users/{uid}", json={"is_active": "perhaps"})
    assert r.status_code == 422 and isinstance(r.json()["detail"], list)
    # keeping one's own address is no clash
    r = admin.patch(f"/users/{uid}", json={"email": f"ONE@{admin.slug}.example.com"})
    assert r.status_code == 200 and r.json()["user"]["email"] == f"one@{admin.slug}.example.com"


def test_resetting_a_password_returns_a_new_temporary_password_once(client, admin):
    # GIVEN a colleague who has set their own password
    created = add_user(admin, "forgetful")
    email, temporary = created["user"]["email"], created["temporary_password"]
    token = login(client, email, temporary).json()["access_token"]
    client.post("/auth/change-password", headers={"Authorization": f"Bearer {token}"},
                json={"current_password": temporary, "new_password": "forgotten password"})
    # WHEN the administrator resets it
    r = admin.patch(f"/users/{created['user']['id']}", json={"reset_password": True})
    # THEN a new temporary password is shown, and the user must change it
    assert r.status_code == 200
    body = r.json()
    assert body["temporary_password"] and body["temporary_password"] != temporary
    assert body["user"]["must_change_password"] is True
    assert body["message"] == "Password reset. The temporary password is shown only once; the user's session has ended."
    assert login(client, email, "forgotten password").status_code == 401
    assert login(client, email, body["temporary_password"]).json()["must_change_password"] is True


def test_deactivating_and_reactivating(client, admin):
    created = add_user(admin, "leaver")
    uid = created["user"]["id"]
    r = admin.patch(f"/users/{uid}", json={"is_active": False})
    assert r.status_code == 200 and r.json()["user"]["is_active"] is False and r.json()["temporary_password"] is None
    # still listed, shown inactive
    listed = {u["id"]: u for u in admin.get("/users").json()["users"]}
    assert listed[uid]["is_active"] is False
    assert login(client, created["user"]["email"], created["temporary_password"]).status_code == 401
    assert admin.patch(f"/users/{uid}", json={"is_active": True}).json()["user"]["is_active"] is True
    assert login(client, created["user"]["email"], created["temporary_password"]).status_code == 200


def test_an_empty_patch_changes_nothing(admin):
    created = add_user(admin)
    r = admin.patch(f"/users/{created['user']['id']}", json={})
    assert r.status_code == 200 and r.json()["user"] == created["user"]


def test_nobody_changes_or_deletes_their_own_account(admin):
    me = admin.get("/users").json()["users"][0]["id"]
    for body in ({"is_active": False}, {"reset_password": True}, {"email": f"me@{admin.slug}.example.com"}, {}):
        r = admin.patch(f"/users/{me}", json=body)
        assert (r.status_code, r.json()) == (403, {"detail": "You cannot modify your own account"}), body
    r = admin.delete(f"/users/{me}")
    assert (r.status_code, r.json()) == (403, {"detail": "You cannot delete your own account"})
    # nothing changed: still active, same address, still logged in
    assert admin.get("/users").json()["users"][0]["email"] == admin.email


def test_deleting_a_user_is_permanent(client, admin):
    created = add_user(admin, "gone")
    uid = created["user"]["id"]
    # WHEN the administrator deletes the colleague
    r = admin.delete(f"/users/{uid}")
    # THEN there is no body, the user is gone from the list, and cannot log in
    assert r.status_code == 204 and r.content == b""
    assert uid not in {u["id"] for u in admin.get("/users").json()["users"]}
    assert login(client, created["user"]["email"], created["temporary_password"]).status_code == 401
    # AND the address is free again
    assert admin.post("/users", json={"email": created["user"]["email"]}).status_code == 201
    # AND a second delete finds nothing
    r = admin.delete(f"/users/{uid}")
    assert (r.status_code, r.json()) == (404, {"detail": "User not found"})


def test_unknown_and_malformed_user_ids(admin):
    missing = str(uuid.uuid4())
    r = admin.patch(f"/users/{missing}", json={"is_active": False})
    assert (r.status_code, r.json()) == (404, {"detail": "User not found"})
    r = admin.delete(f"/users/{missing}")
    assert (r.status_code, r.json()) == (404, {"detail": "User not found"})
    assert admin.patch("/users/not-a-uuid", json={}).status_code == 422
    assert admin.delete("/users/not-a-uuid").status_code == 422


def test_another_tenants_users_are_invisible_and_untouchable(client, admin):
    # GIVEN tenant A with a colleague, and tenant B's administrator
    colleague = add_user(admin, "a-colleague")
    uid = colleague["user"]["id"]
    other = make_admin(client)
    # THEN B's list shows only B's users
    assert [u["email"] for u in other.get("/users").json()["users"]] == [other.email]
    # AND B cannot change, reset, deactivate or delete A's users: they do not exist for B
    for body in ({"is_active": False}, {"reset_password": True}, {"email": f"x@{other.slug}.example.com"}):
        r = other.patch(f"/users/{uid}", json=body)
        assert (r.status_code, r.json()) == (404, {"detail": "User not found"}), body
    r = other.delete(f"/users/{uid}")
    assert (r.status_code, r.json()) == (404, {"detail": "User not found"})
    me_in_a = admin.get("/users").json()["users"][0]["id"]
    assert other.delete(f"/users/{me_in_a}").status_code == 404
    # AND A's colleague is exactly as before
    listed = {u["id"]: u for u in admin.get("/users").json()["users"]}
    assert listed[uid] == colleague["user"]
    assert login(client, colleague["user"]["email"], colleague["temporary_password"]).status_code == 200


def test_the_user_endpoints_need_a_session(client, admin):
    uid = add_user(admin)["user"]["id"]
    for method, path in [("GET", "/users"), ("POST", "/users"), ("PATCH", f"/users/{uid}"), ("DELETE", f"/users/{uid}")]:
        r = client.request(method, path, json={"email": "x@y.example"} if method != "GET" else None)
        assert (r.status_code, r.json()) == (401, {"detail": "Not authenticated"}), (method, path)
        r = client.request(method, path, headers={"Authorization": "Bearer forged"})
        assert (r.status_code, r.json()) == (401, {"detail": "Invalid or expired token"}), (method, path)
