"""Document storage through Microsoft Graph: the connection test and site and drive discovery,
against a local stand-in that speaks the identity platform's and Graph's HTTPS protocol."""

from __future__ import annotations

import socket
import uuid

import pytest

from shared.config import reset_settings
from tests.factories import make_admin
from tests.graph_standin import GraphStandin, pointed_at

NOT_CONFIGURED = "Storage credentials are not configured: save client_id, client_secret and tenant_id first"
SITES = [
    {"id": f"contoso.sharepoint.com,{uuid.UUID(int=i)},{uuid.UUID(int=100 + i)}", "name": f"site{i}",
     "displayName": f"Site {i}", "webUrl": f"https://contoso.sharepoint.com/sites/site{i}"}
    for i in range(5)
]
FINANCE = SITES[1]["id"]
DRIVES = [
    {"id": "b!finance-docs", "name": "Documents", "driveType": "documentLibrary", "webUrl": "https://contoso.sharepoint.com/sites/site1/Shared%20Documents"},
    {"id": "b!finance-models", "name": "Models", "driveType": "documentLibrary", "webUrl": "https://contoso.sharepoint.com/sites/site1/Models"},
]


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    server = GraphStandin(tmp_path_factory.mktemp("graph"), page_size=2).start()
    yield server
    server.stop()


@pytest.fixture()
def graph(standin):
    """Point the service at the stand-in (and trust its certificate) for one test."""
    with pointed_at(standin):
        yield standin


@pytest.fixture()
def directory(graph):
    """An Azure AD directory of its own for each test, with an app registration and five sites."""
    tenant = f"{uuid.uuid4().hex[:12]}.onmicrosoft.com"
    app = graph.add_directory(
        tenant, client_id=str(uuid.uuid4()), client_secret=f"secret~{uuid.uuid4().hex}",
        sites=SITES, drives={FINANCE: DRIVES},
    )
    return {"tenant_id": tenant, "client_id": app.client_id, "client_secret": app.client_secret}


def save(admin, credentials: dict, **extra):
    r = admin.put("/tenant/settings", json={**credentials, **extra})
    assert r.status_code == 200, r.text


def connection_test(admin) -> dict:
    r = admin.post("/tenant/test-storage-connection")
    assert r.status_code == 200, r.text
    return r.json()


# --- test-storage-connection -----------------------------------------------------------------


def test_the_connection_test_without_credentials_says_what_is_missing(admin, graph):
    calls_before = len(graph.seen)
    assert connection_test(admin) == {"success": False, "message": "Storage connection failed", "error": NOT_CONFIGURED}
    save(admin, {"client_id": "only-the-id"})
    assert connection_test(admin)["error"] == NOT_CONFIGURED
    # nothing was sent anywhere
    assert len(graph.seen) == calls_before


def test_a_working_app_registration_connects(admin, directory, graph):
    # GIVEN saved credentials of a working app registration
    save(admin, directory)
    seen_before = len(graph.seen)
    # WHEN the administrator tests the connection
    result = connection_test(admin)
    # THEN it succeeds and says what it could see
    assert result == {"success": True, "message": "Connected to Microsoft Graph: 5 site(s) visible", "error": None}
    # AND the secret went only to the token endpoint, in the POST body; Graph got the bearer token
    calls = graph.seen[seen_before:]
    assert calls[0].path == f"/{directory['tenant_id']}/v2.0/.well-known/openid-configuration"
    token_calls = [c for c in calls if c.method == "POST"]
    assert [c.path for c in token_calls] == [f"/{directory['tenant_id']}/oauth2/v2.0/token"]
    assert "client_credentials" in token_calls[0].body and f"client_id={directory['client_id']}" in token_calls[0].body
    graph_calls = [c for c in calls if c.path.startswith("/v1.0/")]
    assert graph_calls and all(c.headers["Authorization"].startswith("Bearer ") for c in graph_calls)
    assert all(directory["client_secret"] not in c.path and directory["client_secret"] not in str(c.headers) for c in calls)


def test_the_connection_test_checks_the_chosen_drive_or_site(admin, directory):
    save(admin, directory, site_id=FINANCE, site_name="Site 1")
    assert connection_test(admin)["message"] == "Connected to Microsoft Graph: site 'Site 1' is reachable"
    save(admin, {"drive_id": "b!finance-docs", "drive_name": "Documents"})
    assert connection_test(admin) == {
        "success": True, "message": "Connected to Microsoft Graph: drive 'Documents' is reachable", "error": None,
    }
    save(admin, {"drive_id": "b!deleted-library"})
    assert connection_test(admin) == {
        "success": False, "message": "Storage connection failed", "error": "The configured drive was not found",
    }
    save(admin, {"drive_id": None, "site_id": "contoso.sharepoint.com,gone,gone"})
    assert connection_test(admin)["error"] == "The configured site was not found"


@pytest.mark.parametrize(
    "wrong, error",
    [
        ({"client_secret": "a-wrong-secret"}, "Authentication with Microsoft failed: the client secret was rejected"),
        ({"client_id": "00000000-0000-0000-0000-000000000000"},
         "Authentication with Microsoft failed: the application (client_id) was not found in the directory"),
        ({"tenant_id": "fabrikam.onmicrosoft.com"}, "Authentication with Microsoft failed: the directory (tenant_id) was not found"),
    ],
)
def test_rejected_credentials_are_reported_without_leaking_anything(admin, directory, wrong, error):
    # GIVEN credentials with one wrong value
    save(admin, {**directory, **wrong})
    # WHEN the connection is tested
    r = admin.post("/tenant/test-storage-connection")
    # THEN it fails with a plain reason: no secret, no upstream trace, no stack
    assert (r.status_code, r.json()) == (200, {"success": False, "message": "Storage connection failed", "error": error})
    for leak in (directory["client_secret"], "a-wrong-secret", "AADSTS", "Trace ID", "Traceback"):
        assert leak not in r.text


def test_graph_refusing_access_is_reported(admin, directory, graph):
    save(admin, directory)
    graph.graph_failure = (403, {"error": {"code": "accessDenied", "message": "Either scp or roles claim need to be present in the token."}})
    result = connection_test(admin)
    assert result["success"] is False
    assert result["error"] == (
        "Microsoft Graph refused access: the application needs the Sites.Read.All application permission, with admin consent"
    )
    assert "roles claim" not in str(result)


def test_an_unreachable_identity_platform_is_reported(admin, directory, monkeypatch):
    save(admin, directory)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("SHEETCALC_GRAPH_AUTHORITY_HOST", f"https://127.0.0.1:{port}")
    reset_settings()
    result = connection_test(admin)
    assert result == {"success": False, "message": "Storage connection failed", "error": "The Microsoft identity platform could not be reached"}


# --- discover-sites ----------------------------------------------------------------------------


def test_discovering_sites_lists_every_page(admin, directory):
    save(admin, directory)
    r = admin.post("/tenant/storage/discover-sites")
    assert r.status_code == 200
    # five sites, served two to a page: every page was followed
    assert r.json() == [
        {"id": s["id"], "name": s["name"], "display_name": s["displayName"], "web_url": s["webUrl"]} for s in SITES
    ]


def test_discovering_sites_needs_saved_credentials(admin, graph):
    r = admin.post("/tenant/storage/discover-sites")
    assert (r.status_code, r.json()) == (400, {"detail": NOT_CONFIGURED})


def test_discovering_sites_with_a_wrong_secret_is_a_bad_gateway(admin, directory):
    save(admin, {**directory, "client_secret": "a-wrong-secret"})
    r = admin.post("/tenant/storage/discover-sites")
    assert (r.status_code, r.json()) == (502, {"detail": "Authentication with Microsoft failed: the client secret was rejected"})


@pytest.mark.parametrize("status", [500, 503])
def test_a_failing_graph_is_a_bad_gateway_with_a_generic_message(admin, directory, graph, status):
    save(admin, directory)
    graph.graph_failure = (status, {"error": {"code": "serviceNotAvailable", "message": "internal detail x-ms-ags-diagnostic"}})
    for path in ("/tenant/storage/discover-sites", f"/tenant/storage/discover-drives/{FINANCE}"):
        r = admin.post(path)
        assert (r.status_code, r.json()) == (502, {"detail": "Microsoft Graph request failed"}), path


# --- discover-drives ---------------------------------------------------------------------------


def test_discovering_the_drives_of_a_site(admin, directory):
    save(admin, directory)
    r = admin.post(f"/tenant/storage/discover-drives/{FINANCE}")
    assert r.status_code == 200
    assert r.json() == [
        {"id": d["id"], "name": d["name"], "drive_type": d["driveType"], "web_url": d["webUrl"]} for d in DRIVES
    ]
    # a site without libraries has none
    assert admin.post(f"/tenant/storage/discover-drives/{SITES[0]['id']}").json() == []


def test_choosing_a_site_and_drive_from_discovery(admin, directory):
    # The dashboard's flow: credentials, sites, drives, save the choice, test.
    save(admin, directory)
    site = next(s for s in admin.post("/tenant/storage/discover-sites").json() if s["display_name"] == "Site 1")
    drive = admin.post(f"/tenant/storage/discover-drives/{site['id']}").json()[0]
    save(admin, {"site_id": site["id"], "site_name": site["display_name"], "drive_id": drive["id"], "drive_name": drive["name"]})
    settings = admin.get("/tenant/settings").json()
    assert (settings["site_name"], settings["drive_name"]) == ("Site 1", "Documents")
    assert connection_test(admin)["success"] is True


def test_discovering_drives_of_an_unknown_site(admin, directory):
    save(admin, directory)
    # "%2E%2E" reaches the route as ".." (a literal ".." is resolved away by HTTP clients)
    for site_id in ("contoso.sharepoint.com,nope,nope", "%2E%2E", "%2E"):
        r = admin.post(f"/tenant/storage/discover-drives/{site_id}")
        assert (r.status_code, r.json()) == (404, {"detail": "Site not found"}), site_id


def test_discovering_drives_needs_saved_credentials(admin, graph):
    r = admin.post(f"/tenant/storage/discover-drives/{FINANCE}")
    assert (r.status_code, r.json()) == (400, {"detail": NOT_CONFIGURED})


# --- tenancy and sessions ----------------------------------------------------------------------


def test_another_tenant_cannot_use_these_credentials(client, admin, directory):
    # GIVEN tenant A with working storage credentials, and tenant B with none
    save(admin, directory)
    other = make_admin(client)
    # THEN B's storage calls see only B's (missing) settings
    assert connection_test(other)["error"] == NOT_CONFIGURED
    r = other.post("/tenant/storage/discover-sites")
    assert (r.status_code, r.json()) == (400, {"detail": NOT_CONFIGURED})
    r = other.post(f"/tenant/storage/discover-drives/{FINANCE}")
    assert (r.status_code, r.json()) == (400, {"detail": NOT_CONFIGURED})


def test_the_storage_endpoints_need_a_session(client):
    for path in ("/tenant/test-storage-connection", "/tenant/storage/discover-sites", f"/tenant/storage/discover-drives/{FINANCE}"):
        r = client.post(path)
        assert (r.status_code, r.json()) == (401, {"detail": "Not authenticated"}), path
