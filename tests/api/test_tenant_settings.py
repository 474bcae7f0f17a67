"""Tenant settings: the name and document-storage credentials, encrypted at rest, secret masked."""

from __future__ import annotations

import json
import uuid

import pytest
from sqlalchemy import Uuid, bindparam, text

from shared.db.models import Tenant
from shared.db.session import new_session
from shared.security import decrypt
from tests.factories import make_admin

SECRET = "Qx8~s3cret.Value-that-must-never-be-shown_" + uuid.uuid4().hex
STORAGE = {
    "client_id": "11111111-2222-3333-4444-555555555555",
    "client_secret": SECRET,
    "tenant_id": "contoso.onmicrosoft.com",
    "site_id": "contoso.sharepoint.com,aaaa,bbbb",
    "site_name": "Finance",
    "drive_id": "b!drive-1",
    "drive_name": "Documents",
}
EMPTY_STORAGE = {k: None for k in STORAGE}


def stored_row(tenant_id: str) -> str:
    """Everything the database holds for the tenant, as text."""
    with new_session() as session:
        row = session.execute(
            text("SELECT * FROM tenants WHERE id = :id").bindparams(bindparam("id", type_=Uuid)),
            {"id": uuid.UUID(tenant_id)},
        ).mappings().one()
    return json.dumps({k: v if isinstance(v, (str, dict, list, type(None))) else str(v) for k, v in row.items()})


def stored_secret(tenant_id: str) -> str | None:
    with new_session() as session:
        sealed = (session.get(Tenant, uuid.UUID(tenant_id)).storage_settings or {}).get("encrypted", {}).get("client_secret")
    return decrypt(sealed) if sealed else None


def test_a_new_tenant_has_a_name_and_no_storage(admin):
    r = admin.get("/tenant/settings")
    assert r.status_code == 200
    body = r.json()
    assert (body["id"], body["slug"], body["name"]) == (admin.tenant_id, admin.slug, f"Tenant {admin.slug}")
    assert {k: body[k] for k in STORAGE} == EMPTY_STORAGE
    assert body["storage_configured"] is False and body["updated_at"]


def test_saving_storage_settings_shows_everything_but_the_secret(admin):
    # WHEN the administrator saves the storage settings
    r = admin.put("/tenant/settings", json=STORAGE)
    # THEN they come back, the secret masked
    assert r.status_code == 200
    body = r.json()
    assert {k: body[k] for k in STORAGE} == {**STORAGE, "client_secret": "********"}
    assert body["storage_configured"] is True
    assert SECRET not in r.text
    # AND a later GET shows the same
    again = admin.get("/tenant/settings")
    assert again.json() == body and SECRET not in again.text


def test_credentials_are_encrypted_at_rest(admin):
    admin.put("/tenant/settings", json=STORAGE)
    row = stored_row(admin.tenant_id)
    # the database holds none of the three credentials in clear...
    for value in (SECRET, STORAGE["client_id"], STORAGE["tenant_id"]):
        assert value not in row
    # ...but the service can read the secret back
    assert stored_secret(admin.tenant_id) == SECRET


@pytest.mark.parametrize("secret_field", [{"client_secret": "********"}, {}, {"client_secret": "****"}])
def test_sending_the_mask_back_or_leaving_the_secret_out_keeps_it(admin, secret_field):
    # GIVEN saved storage settings
    admin.put("/tenant/settings", json=STORAGE)
    # WHEN the settings form is saved again with a new client id and the masked (or no) secret
    edited = {**{k: v for k, v in STORAGE.items() if k != "client_secret"}, "client_id": "new-client-id", **secret_field}
    r = admin.put("/tenant/settings", json=edited)
    # THEN the client id changed and the stored secret did not
    assert r.status_code == 200 and r.json()["client_id"] == "new-client-id" and r.json()["client_secret"] == "********"
    assert stored_secret(admin.tenant_id) == SECRET


def test_a_get_body_can_be_edited_and_put_back(admin):
    admin.put("/tenant/settings", json=STORAGE)
    body = admin.get("/tenant/settings").json()
    body["name"] = "Acme Insurance"
    r = admin.put("/tenant/settings", json=body)
    assert r.status_code == 200 and r.json()["name"] == "Acme Insurance"
    assert stored_secret(admin.tenant_id) == SECRET


def test_a_new_secret_replaces_the_old_one(admin):
    admin.put("/tenant/settings", json=STORAGE)
    r = admin.put("/tenant/settings", json={"client_secret": "rotated-secret-value"})
    assert r.status_code == 200 and r.json()["client_secret"] == "********"
    assert stored_secret(admin.tenant_id) == "rotated-secret-value"
    # a secret is kept exactly as typed, spaces included
    admin.put("/tenant/settings", json={"client_secret": " padded "})
    assert stored_secret(admin.tenant_id) == " padded "


def test_null_or_empty_clears_a_storage_field(admin):
    admin.put("/tenant/settings", json=STORAGE)
    r = admin.put("/tenant/settings", json={"client_secret": None, "drive_id": "", "drive_name": None})
    body = r.json()
    assert (body["client_secret"], body["drive_id"], body["drive_name"]) == (None, None, None)
    assert body["storage_configured"] is False
    assert (body["client_id"], body["site_id"]) == (STORAGE["client_id"], STORAGE["site_id"])
    assert stored_secret(admin.tenant_id) is None


def test_changing_only_the_name(admin):
    admin.put("/tenant/settings", json=STORAGE)
    r = admin.put("/tenant/settings", json={"name": "  Acme Insurance  "})
    assert r.status_code == 200 and r.json()["name"] == "Acme Insurance"
    assert {k: r.json()[k] for k in STORAGE} == {**STORAGE, "client_secret": "********"}


@pytest.mark.parametrize(
    "body, detail",
    [
        ({"name": None}, "Tenant name must be 1 to 255 characters"),
        ({"name": "   "}, "Tenant name must be 1 to 255 characters"),
        ({"tenant_id": "../../evil"}, "tenant_id must be a directory (tenant) ID or a domain such as contoso.onmicrosoft.com"),
        ({"tenant_id": "contoso.onmicrosoft.com/x"}, "tenant_id must be a directory (tenant) ID or a domain such as contoso.onmicrosoft.com"),
    ],
)
def test_invalid_settings_are_refused_with_a_reason(admin, body, detail):
    r = admin.put("/tenant/settings", json=body)
    assert (r.status_code, r.json()) == (422, {"detail": detail})
    assert admin.get("/tenant/settings").json()["name"] == f"Tenant {admin.slug}"


@pytest.mark.parametrize("body", [{"name": ""}, {"name": "x" * 256}, {"client_id": "x" * 256}, {"client_secret": 42}, []])
def test_malformed_settings_are_a_validation_error(admin, body):
    r = admin.put("/tenant/settings", json=body)
    assert r.status_code == 422 and isinstance(r.json()["detail"], list)


def test_one_tenants_settings_never_show_in_another(client, admin):
    # GIVEN tenant A with storage settings, and tenant B
    admin.put("/tenant/settings", json={**STORAGE, "name": "Tenant A Renamed"})
    other = make_admin(client)
    # THEN B sees its own, empty settings
    body = other.get("/tenant/settings").json()
    assert (body["id"], body["name"]) == (other.tenant_id, f"Tenant {other.slug}")
    assert {k: body[k] for k in STORAGE} == EMPTY_STORAGE
    # AND B's changes leave A's alone
    other.put("/tenant/settings", json={"name": "Tenant B Renamed", "client_secret": "b-secret"})
    a = admin.get("/tenant/settings").json()
    assert a["name"] == "Tenant A Renamed" and stored_secret(admin.tenant_id) == SECRET


def test_the_settings_endpoints_need_a_session(client):
    for method in ("GET", "PUT"):
        r = client.request(method, "/tenant/settings", json={"name": "x"})
        assert (r.status_code, r.json()) == (401, {"detail": "Not authenticated"})
