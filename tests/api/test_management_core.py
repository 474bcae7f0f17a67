"""The management endpoints the core needs: sessions, engines, versions, consumers, access."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

from shared.config import reset_settings
from tests.factories import create_tenant, make_admin


def test_login_rules_and_forced_password_change(client):
    tenant = create_tenant()
    # wrong password and unknown e-mail look the same
    for body in ({"email": tenant["email"], "password": "wrong"}, {"email": "nobody@x.example", "password": "x"}):
        r = client.post("/auth/login", json=body)
        assert (r.status_code, r.json()) == (401, {"detail": "Invalid email or password"})
    r = client.post("/auth/login", json={"email": tenant["email"].upper(), "password": tenant["password"]})
    assert r.status_code == 200
    login = r.json()
    assert login["must_change_password"] is True and login["token_type"] == "bearer" and login["expires_in"] > 0
    assert r.cookies.get("auth_token") == login["access_token"]
    client.cookies.clear()
    auth = {"Authorization": f"Bearer {login['access_token']}"}
    # a temporary password must be changed before anything else works
    r = client.get("/engines", headers=auth)
    assert (r.status_code, r.json()) == (403, {"detail": "Password change required"})
    r = client.post("/auth/change-password", headers=auth, json={"current_password": tenant["password"], "new_password": "short"})
    assert r.status_code == 422
    r = client.post("/auth/change-password", headers=auth, json={"current_password": "wrong", "new_password": "long enough pw"})
    assert r.status_code == 422 and r.json()["detail"] == "Current password is incorrect"
    r = client.post("/auth/change-password", headers=auth, json={"current_password": tenant["password"], "new_password": "long enough pw"})
    assert r.status_code == 200
    # the session ended with the change
    assert client.get("/engines", headers=auth).status_code == 401
    r = client.post("/auth/login", json={"email": tenant["email"], "password": "long enough pw"})
    assert r.json()["must_change_password"] is False
    assert client.get("/engines", headers={"Authorization": f"Bearer {r.json()['access_token']}"}).status_code == 200


def test_second_login_kills_the_first_and_logout_ends_it(client, admin):
    first = admin.token
    second = client.post("/auth/login", json={"email": admin.email, "password": admin.password}).json()["access_token"]
    client.cookies.clear()
    assert client.get("/engines", headers={"Authorization": f"Bearer {first}"}).status_code == 401
    assert client.get("/engines", headers={"Authorization": f"Bearer {second}"}).status_code == 200
    # the cookie alone also authenticates
    assert client.get("/engines", cookies={"auth_token": second}).status_code == 200
    r = client.post("/auth/logout", headers={"Authorization": f"Bearer {second}"})
    assert r.status_code == 200 and "auth_token" in r.headers.get("set-cookie", "")
    assert client.get("/engines", headers={"Authorization": f"Bearer {second}"}).status_code == 401


def test_missing_or_garbage_token_is_401(client):
    assert client.get("/engines").status_code == 401
    assert client.get("/engines", headers={"Authorization": "Bearer garbage"}).status_code == 401


def test_engine_create_list_get(admin):
    r = admin.post("/engines", json={"name": "Pricing Model – EU", "description": "EU prices"})
    assert r.status_code == 201
    engine = r.json()
    assert engine["slug"] == "pricing-model-eu" and engine["active_version"] is None and engine["ip_whitelist_enabled"] is False
    # the same name again gets a distinct slug; an explicit clash is 409
    assert admin.post("/engines", json={"name": "Pricing Model – EU"}).json()["slug"] == "pricing-model-eu-2"
    r = admin.post("/engines", json={"name": "x", "slug": "pricing-model-eu"})
    assert r.status_code == 409
    assert admin.post("/engines", json={"name": "x", "slug": "Bad Slug"}).status_code == 422
    assert admin.post("/engines", json={"name": ""}).status_code == 422
    listed = admin.get("/engines").json()
    assert [e["slug"] for e in listed] == ["pricing-model-eu", "pricing-model-eu-2"]
    detail = admin.get(f"/engines/{engine['id']}").json()
    assert detail["versions"] == [] and detail["consumers"] == [] and detail["ip_whitelist"] == []
    assert admin.get(f"/engines/{uuid.uuid4()}").status_code == 404


def test_upload_detects_named_ranges_and_returns_a_test_key_once(admin, loan_xlsx):
    engine = admin.post("/engines", json={"name": "Loan"}).json()
    r = admin.post(f"/engines/{engine['id']}/versions", data={"version": "1.0"}, files={"file": ("loan.xlsx", loan_xlsx)})
    assert r.status_code == 201, r.text
    version = r.json()
    assert version["test_api_key"].startswith(admin.slug + "_") and version["is_active"] is False
    kinds = {n["name"]: n["kind"] for n in version["named_ranges"]}
    assert kinds["principal"] == "input" and kinds["monthly_payment"] == "output"
    schedule = next(n for n in version["named_ranges"] if n["name"] == "schedule")
    assert (schedule["rows"], schedule["cols"]) == (12, 4)
    detail = admin.get(f"/engines/{engine['id']}").json()
    assert "test_api_key" not in json.dumps(detail) and version["test_api_key"] not in json.dumps(detail)
    # the same version string again is a conflict
    r = admin.post(f"/engines/{engine['id']}/versions", data={"version": "1.0"}, files={"file": ("loan.xlsx", loan_xlsx)})
    assert r.status_code == 409
    # activation switches the active version
    v2 = admin.post(f"/engines/{engine['id']}/versions", data={"version": "2.0"}, files={"file": ("l.xlsx", loan_xlsx)}).json()
    assert admin.post(f"/engines/{engine['id']}/versions/{version['id']}/activate").status_code == 200
    assert admin.post(f"/engines/{engine['id']}/versions/{v2['id']}/activate").json()["is_active"] is True
    detail = admin.get(f"/engines/{engine['id']}").json()
    assert detail["active_version_id"] == v2["id"]
    assert [v["is_active"] for v in detail["versions"]] == [False, True]
    assert admin.get("/engines").json()[0]["active_version"]["version"] == "2.0"


@pytest.mark.parametrize(
    "payload, status",
    [
        (b"", 422),
        (b"this is not a workbook", 422),
        (b"PK\x03\x04" + b"\x00" * 200, 422),
    ],
)
def test_bad_uploads_are_refused_clearly(admin, payload, status):
    engine = admin.post("/engines", json={"name": "E"}).json()
    r = admin.post(f"/engines/{engine['id']}/versions", data={"version": "1"}, files={"file": ("x.xlsx", payload)})
    assert r.status_code == status
    assert "Traceback" not in r.text and "panic" not in r.text.lower()
    assert admin.get(f"/engines/{engine['id']}").json()["versions"] == []


def test_oversized_upload_is_413(admin, monkeypatch):
    monkeypatch.setenv("SHEETCALC_MAX_UPLOAD_BYTES", "1000")
    reset_settings()
    try:
        engine = admin.post("/engines", json={"name": "E"}).json()
        r = admin.post(f"/engines/{engine['id']}/versions", data={"version": "1"}, files={"file": ("x.xlsx", b"PK" + b"0" * 5000)})
    finally:
        monkeypatch.delenv("SHEETCALC_MAX_UPLOAD_BYTES")
        reset_settings()
    assert r.status_code == 413 and "limit" in r.json()["detail"]


def test_schema_patch_validates_and_warns(admin, deployed):
    path = f"/engines/{deployed.engine_id}/versions/{deployed.version_id}"
    r = admin.patch(path, json={"input_schema": {"type": "object", "properties": {"principal": {"type": 5}}}})
    assert r.status_code == 422
    schema = {"type": "object", "properties": {"principal": {"type": "number"}, "colour": {"type": "string"}}}
    r = deployed.admin.patch(path, json={"input_schema": schema})
    assert r.status_code == 200
    warnings = r.json()["warnings"]
    assert any("'colour'" in w for w in warnings)
    assert any("'years'" in w for w in warnings)
    assert r.json()["input_schema"] == schema


def test_consumer_create_and_grant(admin, deployed):
    r = admin.post("/consumers", json={"name": "Quotes site"})
    assert r.status_code == 201
    body = r.json()
    assert body["api_key"].startswith(admin.slug + "_") and "only once" in body["message"]
    uuid.UUID(body["api_key"][len(admin.slug) + 1:])
    r = admin.put(f"/engines/{deployed.engine_id}/access/{body['id']}", json={"can_execute": True})
    assert r.json() == {
        "consumer_id": body["id"], "engine_id": deployed.engine_id,
        "can_execute": True, "can_view_jobs": False, "can_download": False, "can_view_about": False,
    }
    # a later PUT changes only the flags it names
    r = admin.put(f"/engines/{deployed.engine_id}/access/{body['id']}", json={"can_view_jobs": True})
    assert r.json()["can_execute"] is True and r.json()["can_view_jobs"] is True
    assert admin.put(f"/engines/{deployed.engine_id}/access/{uuid.uuid4()}", json={}).status_code == 404
    names = [c["consumer_name"] for c in admin.get(f"/engines/{deployed.engine_id}").json()["consumers"]]
    assert sorted(names) == ["Pricing app", "Quotes site"]


def test_another_tenant_sees_nothing(client, deployed):
    other = make_admin(client)
    assert other.get("/engines").json() == []
    assert other.get(f"/engines/{deployed.engine_id}").status_code == 404
    assert other.post(f"/engines/{deployed.engine_id}/versions/{deployed.version_id}/activate").status_code == 404
    assert other.patch(f"/engines/{deployed.engine_id}/versions/{deployed.version_id}", json={"input_schema": None}).status_code == 404
    assert other.put(f"/engines/{deployed.engine_id}/access/{deployed.consumer_id}", json={}).status_code == 404
    r = other.post(f"/engines/{deployed.engine_id}/versions", data={"version": "9"}, files={"file": ("x.xlsx", b"PK")})
    assert r.status_code == 404


def test_about_shows_the_active_version(client, deployed):
    schema = {"type": "object", "properties": {"principal": {"type": "number"}}}
    deployed.admin.patch(f"/engines/{deployed.engine_id}/versions/{deployed.version_id}", json={"input_schema": schema})
    r = client.get(f"/jobs/about/{deployed.admin.slug}/{deployed.engine_slug}", headers={"X-API-Key": deployed.api_key})
    assert r.status_code == 200
    body = r.json()
    # the spec's fields, and what one job on the version costs (measured when it was checked)
    assert set(body) == {"name", "slug", "description", "version", "input_schema", "output_schema", "updated_at",
                         "calc_ms_p50", "calc_ms_p95"}
    assert 0 < body["calc_ms_p50"] <= body["calc_ms_p95"]
    assert body["version"] == "1.0" and body["input_schema"] == schema and body["output_schema"] is None


def test_health(client):
    assert client.get("/health").json() == {"status": "ok", "version": "0.1.0"}


@pytest.mark.own_transactions  # the command is another process on the database
def test_create_tenant_command_prints_json(local_aws):
    slug = f"cli-{uuid.uuid4().hex[:8]}"
    out = subprocess.run(
        [sys.executable, "-m", "shared.cli", "create-tenant", "--slug", slug, "--name", "CLI Co", "--admin-email", f"ops@{slug}.example"],
        capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr
    created = json.loads(out.stdout)
    assert created["slug"] == slug and created["admin_email"] == f"ops@{slug}.example" and len(created["temporary_password"]) >= 12
    again = subprocess.run(
        [sys.executable, "-m", "shared.cli", "create-tenant", "--slug", slug, "--name", "CLI Co", "--admin-email", "x@y.example"],
        capture_output=True, text=True, timeout=120,
    )
    assert again.returncode == 1 and "already exists" in again.stderr


def test_a_huge_declared_body_is_refused_before_it_is_read(admin, monkeypatch):
    monkeypatch.setenv("SHEETCALC_MAX_UPLOAD_BYTES", "1000")
    reset_settings()
    try:
        engine = admin.post("/engines", json={"name": "E"}).json()
        big = b"PK" + b"0" * (2 * 1024 * 1024)
        r = admin.post(f"/engines/{engine['id']}/versions", data={"version": "1"}, files={"file": ("x.xlsx", big)})
    finally:
        monkeypatch.delenv("SHEETCALC_MAX_UPLOAD_BYTES")
        reset_settings()
    assert r.status_code == 413 and "limit" in r.json()["detail"]
    assert admin.get(f"/engines/{engine['id']}").json()["versions"] == []
