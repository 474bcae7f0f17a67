"""What the console needs from the API beyond the specification: an engine's contract for an
administrator (no API key), the fidelity report's cells left out of the comparison, and the icon
browsers ask for at /favicon.ico."""

from __future__ import annotations

from openapi_spec_validator import validate

from shared.services.jobs import NO_ACTIVE_VERSION
from tests.factories import deploy_loan, make_admin


def test_an_administrator_downloads_the_contract_its_consumers_get(client, deployed):
    # GIVEN an engine with an active version, whose consumer may read its contract
    consumers_copy = client.get(f"/jobs/openapi/{deployed.admin.slug}/{deployed.engine_slug}", headers={"X-API-Key": deployed.api_key})
    assert consumers_copy.status_code == 200, consumers_copy.text
    # WHEN its administrator asks for it with their session, not a key
    r = deployed.admin.get(f"/engines/{deployed.engine_id}/openapi")
    # THEN it is the same valid OpenAPI document, offered as a file named after the engine
    assert r.status_code == 200, r.text
    validate(r.json())
    assert r.json() == consumers_copy.json()
    assert r.headers["content-disposition"] == f'attachment; filename="{deployed.engine_slug}.openapi.json"'


def test_the_contract_needs_an_active_version_and_the_engines_tenant(client, admin, loan_xlsx):
    # GIVEN an engine whose only version is not active
    inactive = deploy_loan(admin, loan_xlsx, activate=False)
    # THEN its contract is refused as the consumers' is, in the same words
    r = admin.get(f"/engines/{inactive.engine_id}/openapi")
    assert (r.status_code, r.json()) == (400, {"detail": NO_ACTIVE_VERSION})
    # AND another tenant's administrator does not find the engine, nor does a caller without a session
    r = make_admin(client).get(f"/engines/{inactive.engine_id}/openapi")
    assert (r.status_code, r.json()) == (404, {"detail": "Engine not found"})
    assert client.get(f"/engines/{inactive.engine_id}/openapi").status_code == 401


def test_the_fidelity_report_says_which_cells_were_not_compared_and_why(deployed):
    # GIVEN the sample workbook, saved by a program that stores no calculated values
    # WHEN its fidelity report is read
    report = deployed.admin.get(f"/engines/{deployed.engine_id}/versions/{deployed.version_id}/fidelity").json()
    # THEN nothing was compared, and the report says its formula cells had no value saved by Excel
    assert report["checked"] is True and report["cells_compared"] == 0
    assert report["skipped"]["no_cached_value"] > 0
    assert report["flagged_total"] == 0


def test_favicon_ico_is_the_consoles_icon(client):
    r = client.get("/favicon.ico")
    assert r.status_code == 200
    assert r.headers["content-type"] == "image/x-icon"
    assert r.content[:4] == b"\x00\x00\x01\x00"  # an ICO file's header: reserved 0, type 1 (icon)
    assert client.get("/dashboard/favicon.svg").headers["content-type"].startswith("image/svg+xml")
