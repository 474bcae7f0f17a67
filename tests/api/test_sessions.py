"""Management sessions: one live session per user, and everything that ends one."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import jwt.api_jwt

from tests.envtools import settings_env
from tests.factories import create_tenant, make_admin

DEAD = {"detail": "Invalid or expired token"}


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def login(client, email: str, password: str):
    r = client.post("/auth/login", json={"email": email, "password": password})
    client.cookies.clear()  # each test says which credentials it sends
    return r


def ready_colleague(client, admin, email: str | None = None) -> dict:
    """A second user of the admin's tenant who has changed the temporary password and is logged in."""
    email = email or f"colleague@{admin.slug}.example.com"
    created = admin.post("/users", json={"email": email}).json()
    temporary = created["temporary_password"]
    first = login(client, email, temporary).json()["access_token"]
    r = client.post("/auth/change-password", headers=bearer(first), json={"current_password": temporary, "new_password": "colleague pw 123"})
    assert r.status_code == 200, r.text
    token = login(client, email, "colleague pw 123").json()["access_token"]
    return {"id": created["user"]["id"], "email": email, "password": "colleague pw 123", "token": token}


def clock_at(moment: datetime) -> type[datetime]:
    """A ``datetime`` class whose ``now()`` is ``moment`` (for PyJWT's expiry check)."""

    class Clock(datetime):
        @classmethod
        def now(cls, tz=None):
            return moment.astimezone(tz)

    return Clock


def cookie_attributes(set_cookie: str) -> set[str]:
    return {part.strip().split("=")[0].lower() for part in set_cookie.split(";")[1:]}


def test_a_second_login_ends_the_first_session(client, admin):
    # GIVEN an administrator logged in on one device
    first = admin.token
    # WHEN they log in again elsewhere
    second = login(client, admin.email, admin.password).json()["access_token"]
    # THEN the first device is logged out and the second works
    r = client.get("/users", headers=bearer(first))
    assert (r.status_code, r.json()) == (401, DEAD)
    assert client.get("/users", headers=bearer(second)).status_code == 200


def test_changing_the_password_ends_the_session_and_the_old_password(client, admin):
    # WHEN the administrator changes their own password
    r = client.post(
        "/auth/change-password", headers=admin.headers,
        json={"current_password": admin.password, "new_password": "a brand new password"},
    )
    # THEN they are told to log in again, the cookie is cleared, and the token is dead
    assert (r.status_code, r.json()) == (200, {"message": "Password changed. Please log in again."})
    assert r.headers["set-cookie"].startswith('auth_token=""') and "max-age=0" in r.headers["set-cookie"].lower()
    r = client.get("/users", headers=admin.headers)
    assert (r.status_code, r.json()) == (401, DEAD)
    # AND only the new password logs in
    assert login(client, admin.email, admin.password).status_code == 401
    assert login(client, admin.email, "a brand new password").status_code == 200


def test_a_temporary_password_blocks_everything_but_change_password_and_logout(client):
    # GIVEN a new tenant's administrator logged in with the temporary password
    tenant = create_tenant()
    token = login(client, tenant["email"], tenant["password"]).json()["access_token"]
    # THEN every management endpoint refuses, with the reason
    for method, path in [("GET", "/users"), ("POST", "/users"), ("GET", "/tenant/settings"), ("PUT", "/tenant/settings")]:
        r = client.request(method, path, headers=bearer(token), json={"email": "x@y.example"} if method == "POST" else {})
        assert (r.status_code, r.json()) == (403, {"detail": "Password change required"}), (method, path)
    # AND logging out still works
    r = client.post("/auth/logout", headers=bearer(token))
    assert (r.status_code, r.json()) == (200, {"message": "Logged out"})


def test_an_expired_token_is_refused(client, admin, monkeypatch):
    # GIVEN sessions that last three seconds
    with settings_env(SHEETCALC_JWT_TTL_SECONDS="3"):
        before = datetime.now(timezone.utc).replace(microsecond=0)
        r = login(client, admin.email, admin.password)
        after = datetime.now(timezone.utc)
        body = r.json()
        # THEN the login says so, and the token works for now
        assert body["expires_in"] == 3
        expires_at = datetime.fromisoformat(body["expires_at"])
        assert before + timedelta(seconds=3) <= expires_at <= after + timedelta(seconds=3)
        assert client.get("/users", headers=bearer(body["access_token"])).status_code == 200
        # WHEN the announced expiry has passed (the token check's clock is moved past it
        # rather than waited for, so a slow machine cannot expire the token early)
        monkeypatch.setattr(jwt.api_jwt, "datetime", clock_at(expires_at + timedelta(seconds=1.1)))
        r = client.get("/users", headers=bearer(body["access_token"]))
    # THEN the token no longer works, although it is still the user's latest session
    assert (r.status_code, r.json()) == (401, DEAD)


def test_last_login_is_recorded(client, admin):
    # GIVEN a colleague who was created but never logged in
    created = admin.post("/users", json={"email": f"new@{admin.slug}.example.com"}).json()
    assert created["user"]["last_login_at"] is None
    before = datetime.now(timezone.utc) - timedelta(seconds=1)
    # WHEN they log in
    assert login(client, created["user"]["email"], created["temporary_password"]).status_code == 200
    # THEN the user list shows when
    listed = {u["email"]: u for u in admin.get("/users").json()["users"]}
    last = datetime.fromisoformat(listed[created["user"]["email"]]["last_login_at"])
    assert before <= last <= datetime.now(timezone.utc)
    # AND the administrator's own login is there too
    assert listed[admin.email]["last_login_at"] is not None


def test_logout_ends_the_session_and_clears_the_cookie(client, admin):
    # WHEN the administrator logs out
    r = client.post("/auth/logout", headers=admin.headers)
    # THEN the cookie is cleared and the token is dead
    assert (r.status_code, r.json()) == (200, {"message": "Logged out"})
    assert r.headers["set-cookie"].startswith('auth_token=""')
    assert client.get("/users", headers=admin.headers).status_code == 401


def test_logout_keeping_the_session_only_clears_the_cookie(client, admin):
    # WHEN the administrator logs out of this browser with invalidate_session=false
    r = client.post("/auth/logout", params={"invalidate_session": "false"}, headers=admin.headers)
    # THEN the cookie is still cleared
    assert (r.status_code, r.json()) == (200, {"message": "Logged out"})
    assert r.headers["set-cookie"].startswith('auth_token=""') and "max-age=0" in r.headers["set-cookie"].lower()
    # AND the session itself (used elsewhere with the bearer token) goes on working
    assert client.get("/users", headers=admin.headers).status_code == 200


def test_logout_through_the_cookie_alone(client, admin):
    # GIVEN a browser that holds only the auth_token cookie
    client.cookies.clear()
    token = client.post("/auth/login", json={"email": admin.email, "password": admin.password}).json()["access_token"]
    assert client.cookies.get("auth_token") == token
    assert client.get("/users").status_code == 200
    # WHEN it logs out
    r = client.post("/auth/logout")
    assert r.status_code == 200
    # THEN the browser drops the cookie, and the session is over even if it kept it
    assert "auth_token" not in client.cookies
    client.cookies.set("auth_token", token)
    r = client.get("/users")
    client.cookies.clear()
    assert (r.status_code, r.json()) == (401, DEAD)


def test_logout_without_a_session_is_harmless(client):
    r = client.post("/auth/logout")
    assert (r.status_code, r.json()) == (200, {"message": "Logged out"})
    r = client.post("/auth/logout", headers=bearer("not-a-token"))
    assert (r.status_code, r.json()) == (200, {"message": "Logged out"})


def test_the_session_cookie_is_httponly_lax_and_secure_outside_dev(client, admin):
    # In dev (plain http on localhost) the cookie cannot be Secure
    r = client.post("/auth/login", json={"email": admin.email, "password": admin.password})
    client.cookies.clear()
    set_cookie = r.headers["set-cookie"]
    assert set_cookie.startswith(f"auth_token={r.json()['access_token']}")
    assert "httponly" in cookie_attributes(set_cookie) and "samesite=lax" in set_cookie.lower()
    assert "secure" not in cookie_attributes(set_cookie)
    # Outside dev it is Secure too, and clearing it uses the same attributes
    with settings_env(SHEETCALC_ENV="prod"):
        r = client.post("/auth/login", json={"email": admin.email, "password": admin.password})
        client.cookies.clear()
        assert {"httponly", "secure", "samesite", "path", "max-age"} <= cookie_attributes(r.headers["set-cookie"])
        r = client.post("/auth/logout", headers=bearer(r.json()["access_token"]))
        assert {"httponly", "secure", "samesite", "path"} <= cookie_attributes(r.headers["set-cookie"])


def test_resetting_a_password_ends_that_users_session(client, admin):
    # GIVEN a colleague who is logged in
    colleague = ready_colleague(client, admin)
    assert client.get("/users", headers=bearer(colleague["token"])).status_code == 200
    # WHEN the administrator resets the colleague's password
    r = admin.patch(f"/users/{colleague['id']}", json={"reset_password": True})
    temporary = r.json()["temporary_password"]
    # THEN the colleague's live session stops at once, and the old password no longer logs in
    r = client.get("/users", headers=bearer(colleague["token"]))
    assert (r.status_code, r.json()) == (401, DEAD)
    assert login(client, colleague["email"], colleague["password"]).status_code == 401
    # AND the temporary password logs in, but must be changed first
    r = login(client, colleague["email"], temporary)
    assert r.json()["must_change_password"] is True
    assert client.get("/users", headers=bearer(r.json()["access_token"])).status_code == 403
    # AND the administrator's own session is untouched
    assert admin.get("/users").status_code == 200


def test_a_deactivated_user_is_locked_out_at_once(client, admin):
    # GIVEN a colleague who is logged in
    colleague = ready_colleague(client, admin)
    # WHEN the administrator deactivates them
    assert admin.patch(f"/users/{colleague['id']}", json={"is_active": False}).status_code == 200
    # THEN their live token is refused on the next request, and they cannot log in
    r = client.get("/users", headers=bearer(colleague["token"]))
    assert (r.status_code, r.json()) == (401, DEAD)
    r = login(client, colleague["email"], colleague["password"])
    assert (r.status_code, r.json()) == (401, {"detail": "Invalid email or password"})
    # AND reactivation lets them log in again (the old session stays over)
    assert admin.patch(f"/users/{colleague['id']}", json={"is_active": True}).status_code == 200
    assert client.get("/users", headers=bearer(colleague["token"])).status_code == 401
    assert login(client, colleague["email"], colleague["password"]).status_code == 200


def test_a_deleted_users_session_is_over(client, admin):
    colleague = ready_colleague(client, admin)
    assert admin.delete(f"/users/{colleague['id']}").status_code == 204
    assert client.get("/users", headers=bearer(colleague["token"])).status_code == 401
    assert login(client, colleague["email"], colleague["password"]).status_code == 401


def test_one_tenants_token_never_reaches_another_tenant(client, admin):
    # GIVEN administrators of two tenants
    other = make_admin(client)
    # THEN each sees only their own tenant through their own token
    assert [u["email"] for u in admin.get("/users").json()["users"]] == [admin.email]
    assert [u["email"] for u in other.get("/users").json()["users"]] == [other.email]
