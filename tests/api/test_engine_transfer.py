"""Engine export and import: GET /engines/{id}/export, POST /engines/import.

An export carries the engine's versions, schemas, engine choices and test cases and nothing
secret; an import replays the uploads in another tenant and gives the same answers; a damaged,
changed or refused archive creates nothing; a taken slug is suffixed (or 409 when asked for);
another tenant's engine cannot be exported.
"""

from __future__ import annotations

import io
import json
import uuid
import zipfile
from datetime import datetime, timezone

import pytest

from shared.db.models import Job
from shared.db.session import session_scope
from shared.repositories import engines as engine_repo
from shared.services import job_runner, webhook_signing
from tests.corpus import corpus_file
from tests.factories import create_tenant, sign_in

AT = datetime(2026, 1, 15, 12, 0, tzinfo=timezone.utc)
INPUT_SCHEMA = {"type": "object", "properties": {
    "principal": {"type": "number", "minimum": 1000}, "annual_rate": {"type": "number"},
    "years": {"type": "integer"}, "start_date": {"type": "string", "format": "date"}}}
OUTPUT_SCHEMA = {"type": "object", "properties": {"monthly_payment": {"type": "number"}, "end_date": {"type": "string"},
                                                  "schedule": {"type": "array"}}}
SEVERAL_INPUTS = [
    {},
    {"principal": 250000, "annual_rate": 0.045, "years": 30},
    {"principal": 120000, "annual_rate": 0.0725, "years": 15, "start_date": "2027-02-28"},
    {"principal": 5000, "annual_rate": 0.0, "years": 1},
]


def _export(admin, engine_id) -> bytes:
    r = admin.get(f"/engines/{engine_id}/export")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/zip"
    assert "attachment" in r.headers["content-disposition"]
    return r.content


def _import(admin, archive: bytes, **form):
    return admin.post("/engines/import", files={"file": ("engine.zip", archive, "application/zip")}, data=form)


def _engine_count(admin) -> int:
    return len(admin.get("/engines").json())


def _outputs(version_id: str, inputs: dict, job_id: uuid.UUID):
    """The service's answer for a job with these inputs on this version (the worker's calculation)."""
    with session_scope() as session:
        version = engine_repo.get_version_any_tenant(session, version_id=uuid.UUID(version_id))
        session.expunge(version)
    return job_runner.recalculate(Job(id=job_id, inputs=inputs, created_at=AT), version)


def _rewritten(archive: bytes, change) -> bytes:
    """The archive with ``change(name, data) -> data`` applied to every entry."""
    source = zipfile.ZipFile(io.BytesIO(archive))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for info in source.infolist():
            zf.writestr(info.filename, change(info.filename, source.read(info.filename)))
    return out.getvalue()


@pytest.fixture()
def other_admin(admin):
    return sign_in(admin.client, create_tenant())


@pytest.fixture()
def exported(deployed, loan_xlsx):
    """The sample engine with schemas, a whitelist, a second version pinned to formulas, a webhook
    secret in its tenant, exported."""
    admin = deployed.admin
    assert admin.patch(f"/engines/{deployed.engine_id}/versions/{deployed.version_id}",
                       json={"input_schema": INPUT_SCHEMA, "output_schema": OUTPUT_SCHEMA}).status_code == 200
    assert admin.patch(f"/engines/{deployed.engine_id}",
                       json={"ip_whitelist_enabled": True, "ip_whitelist": ["203.0.113.77"]}).status_code == 200
    second = admin.post(f"/engines/{deployed.engine_id}/versions", data={"version": "2.0-formulas"},
                        files={"file": ("loan-quote.xlsx", loan_xlsx)})
    assert second.status_code == 201, second.text
    assert admin.patch(f"/engines/{deployed.engine_id}/versions/{second.json()['id']}",
                       json={"calc_engine": "formulas"}).status_code == 200
    with session_scope() as session:
        secret = webhook_signing.rotate(session, tenant_id=uuid.UUID(admin.tenant_id)).secret
    return deployed, _export(admin, deployed.engine_id), {"test_key_2": second.json()["test_api_key"], "webhook_secret": secret}


def test_round_trip_into_another_tenant_gives_every_output_alike(exported, other_admin):
    deployed, archive, _ = exported

    r = _import(other_admin, archive)

    assert r.status_code == 201, r.text
    body = r.json()
    assert body["engine"]["slug"] == deployed.engine_slug and body["engine"]["name"] == "Loan quote"
    imported = {v["version"]: v for v in body["versions"]}
    assert set(imported) == {"1.0", "2.0-formulas"}
    assert imported["1.0"]["is_active"] and not imported["2.0-formulas"]["is_active"]
    assert imported["2.0-formulas"]["calc_engine"] == "formulas" and imported["2.0-formulas"]["calc_engine_pinned"]
    assert any("pinned to formulas" in c for c in body["changes"])
    assert any("IP whitelist" in c for c in body["changes"])
    detail = other_admin.get(f"/engines/{body['engine']['id']}").json()
    assert detail["ip_whitelist"] == [] and detail["ip_whitelist_enabled"] is False
    one = next(v for v in detail["versions"] if v["version"] == "1.0")
    assert one["input_schema"] == INPUT_SCHEMA and one["output_schema"] == OUTPUT_SCHEMA
    for inputs in SEVERAL_INPUTS:
        job_id = uuid.uuid4()
        assert _outputs(imported["1.0"]["id"], inputs, job_id) == _outputs(deployed.version_id, inputs, job_id)
    # a new test key for each version, never the exported one
    assert imported["1.0"]["test_api_key"] != deployed.test_key


def test_the_archive_holds_no_key_consumer_secret_or_whitelist(exported):
    deployed, archive, secrets_ = exported
    zf = zipfile.ZipFile(io.BytesIO(archive))
    manifest = json.loads(zf.read("manifest.json"))
    everything = b"".join(zf.read(name) for name in zf.namelist())

    assert manifest["format_version"] == 1 and manifest["active_version"] == "1.0"
    assert [v["version"] for v in manifest["versions"]] == ["1.0", "2.0-formulas"]
    for secret in (deployed.api_key, deployed.test_key, secrets_["test_key_2"], secrets_["webhook_secret"],
                   "203.0.113.77", "Pricing app", deployed.consumer_id):
        assert secret.encode() not in everything, secret
    assert "test_key_hash" not in json.dumps(manifest) and "ip_whitelist\"" not in json.dumps(manifest)


def test_a_changed_workbook_is_refused_and_nothing_is_created(exported, other_admin):
    _, archive, _ = exported
    before = _engine_count(other_admin)
    changed = _rewritten(archive, lambda name, data: data + b"\0" if name.endswith(".xlsx") else data)

    r = _import(other_admin, changed)

    assert r.status_code == 400 and "SHA-256" in r.json()["detail"]
    assert _engine_count(other_admin) == before


@pytest.mark.parametrize("damage, status, words", [
    (lambda a: b"not a zip at all", 400, "not a zip"),
    (lambda a: a[: len(a) // 2], 400, "not a zip"),
    (lambda a: _rewritten(a, lambda n, d: b"{" if n == "manifest.json" else d), 400, "not JSON"),
    (lambda a: _rewritten(a, lambda n, d: json.dumps({**json.loads(d), "format_version": 99}).encode()
                          if n == "manifest.json" else d), 422, "newer"),
    (lambda a: _rewritten(a, lambda n, d: json.dumps({**json.loads(d), "format": "other"}).encode()
                          if n == "manifest.json" else d), 422, "not a sheetcalc engine export"),
])
def test_a_damaged_archive_is_refused_clearly(exported, other_admin, damage, status, words):
    _, archive, _ = exported
    before = _engine_count(other_admin)

    r = _import(other_admin, damage(archive))

    assert r.status_code == status, r.text
    assert words in r.json()["detail"]
    assert _engine_count(other_admin) == before


def test_a_version_the_upload_refuses_leaves_nothing_behind(admin, other_admin):
    # GIVEN an archive whose first version is checked in the background after its upload (the
    # upload commits it then) and whose second is not a workbook, with honest checksums
    from shared.services import engine_archive

    good = corpus_file("pycel/tests/fixtures/npv.xlsx").read_bytes()  # IronCalc 27 of 33: formulas checked after
    archive = engine_archive.write(engine_archive.Archive(
        slug="broken", name="Broken", description=None, active_version="1",
        versions=[engine_archive.ArchivedVersion("1", "npv.xlsx", good),
                  engine_archive.ArchivedVersion("2", "bad.xlsx", b"PK\x03\x04 this is not a workbook")],
    ))
    before = _engine_count(other_admin)

    r = _import(other_admin, archive)

    assert r.status_code in (400, 422), r.text
    assert r.json()["detail"].startswith("Version '2' could not be imported")
    assert _engine_count(other_admin) == before
    with session_scope() as session:
        assert engine_repo.get_engine_by_slug(session, tenant_id=uuid.UUID(other_admin.tenant_id), slug="broken") is None


def test_a_taken_slug_is_suffixed_and_said_or_409_when_asked_for(exported):
    deployed, archive, _ = exported
    admin = deployed.admin  # the same tenant: the slug is taken

    r = _import(admin, archive)

    assert r.status_code == 201, r.text
    assert r.json()["engine"]["slug"] == f"{deployed.engine_slug}-2"
    assert f"imported as '{deployed.engine_slug}-2'" in " ".join(r.json()["changes"])
    taken = _import(admin, archive, slug=deployed.engine_slug)
    assert taken.status_code == 409
    named = _import(admin, archive, slug="loan-copy", name="Loan copy")
    assert named.status_code == 201 and named.json()["engine"]["slug"] == "loan-copy"
    assert named.json()["engine"]["name"] == "Loan copy"


def test_another_tenants_engine_cannot_be_exported(deployed, other_admin):
    assert other_admin.get(f"/engines/{deployed.engine_id}/export").status_code == 404
    assert other_admin.client.get(f"/engines/{deployed.engine_id}/export").status_code == 401


def test_test_cases_travel_with_the_engine(deployed, other_admin):
    from shared.services import test_cases

    with session_scope() as session:
        test_cases.create(session, tenant_id=uuid.UUID(deployed.admin.tenant_id), engine_id=uuid.UUID(deployed.engine_id),
                          fields=test_cases.CaseFields(name="thirty years", inputs={"principal": 250000, "annual_rate": 0.045, "years": 30},
                                                       expected={"monthly_payment": 1266.71}, tolerances={"monthly_payment": {"absolute": 0.01}}))
    archive = _export(deployed.admin, deployed.engine_id)

    r = _import(other_admin, archive)

    assert r.status_code == 201, r.text
    assert r.json()["test_cases_imported"] == 1
    with session_scope() as session:
        cases = test_cases.list_for_engine(session, tenant_id=uuid.UUID(other_admin.tenant_id),
                                           engine_id=uuid.UUID(r.json()["engine"]["id"]))
        assert [(c.name, c.expected) for c in cases] == [("thirty years", {"monthly_payment": 1266.71})]
