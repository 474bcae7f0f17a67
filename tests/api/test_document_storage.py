"""Each uploaded version is copied to the tenant's document library (a SharePoint drive) by the
worker, through the API and the real worker handler, against the Graph stand-in."""

from __future__ import annotations

import io
import json
import secrets
import uuid
from urllib.parse import quote

import openpyxl
import pytest

from shared.adapters import queues
from shared.db.models import EngineVersion
from shared.db.session import session_scope
from shared.services.version_checks import check_in_background
from tests.api.test_storage_graph import DRIVES, FINANCE, SITES
from tests.factories import deploy_loan
from tests.graph_standin import GraphStandin, pointed_at

DRIVE = DRIVES[0]
BACKGROUND_COPY = "The workbook is copied to the tenant's document library in the background (see the version's document_storage)"


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    server = GraphStandin(tmp_path_factory.mktemp("graph")).start()
    yield server
    server.stop()


@pytest.fixture()
def graph(standin):
    """Point the service at the stand-in (and trust its certificate) for one test."""
    with pointed_at(standin):
        yield standin


@pytest.fixture()
def library(admin, graph) -> dict:
    """An app registration of its own, saved in the tenant's settings with the finance drive chosen."""
    tenant = f"{uuid.uuid4().hex[:12]}.onmicrosoft.com"
    app = graph.add_directory(
        tenant, client_id=str(uuid.uuid4()), client_secret=f"secret~{uuid.uuid4().hex}",
        sites=SITES, drives={FINANCE: DRIVES},
    )
    settings = {"tenant_id": tenant, "client_id": app.client_id, "client_secret": app.client_secret,
                "site_id": FINANCE, "drive_id": DRIVE["id"], "drive_name": DRIVE["name"]}
    r = admin.put("/tenant/settings", json=settings)
    assert r.status_code == 200, r.text
    return settings


@pytest.fixture(scope="module")
def big_xlsx(loan_xlsx) -> bytes:
    """The loan workbook plus a sheet of incompressible text: over 4 MB once zipped."""
    wb = openpyxl.load_workbook(io.BytesIO(loan_xlsx))
    padding = wb.create_sheet("Padding")
    for row in range(1, 7001):
        padding.cell(row=row, column=1, value=secrets.token_urlsafe(750))
    out = io.BytesIO()
    wb.save(out)
    data = out.getvalue()
    assert 4 * 1024 * 1024 < len(data) < 8 * 1024 * 1024
    return data


def upload(admin, data: bytes, *, version: str = "1.0", filename: str = "loan-quote.xlsx", engine_id: str | None = None):
    engine_id = engine_id or admin.post("/engines", json={"name": f"Loan {uuid.uuid4().hex[:6]}"}).json()["id"]
    r = admin.post(
        f"/engines/{engine_id}/versions", data={"version": version},
        files={"file": (filename, data, "application/octet-stream")},
    )
    assert r.status_code == 201, r.text
    return engine_id, r.json()


def version_detail(admin, engine_id: str, version_id: str) -> dict:
    engine = admin.get(f"/engines/{engine_id}").json()
    return next(v for v in engine["versions"] if v["id"] == version_id)


def path_of(admin, engine_id: str, version: str, filename: str) -> str:
    return f"sheetcalc/{admin.get(f'/engines/{engine_id}').json()['slug']}/{version}/{filename}"


def uploads_to(graph, path: str) -> list:
    """The upload requests (simple PUTs) for the engine folder of ``path``."""
    return [s for s in graph.uploads() if f"/sheetcalc/{path.split('/')[1]}/" in s.path]


def test_an_upload_is_copied_to_the_document_library_by_the_worker(admin, library, graph, loan_xlsx, run_checks):
    # GIVEN a tenant whose document library is configured
    # WHEN a version is uploaded
    engine_id, version = upload(admin, loan_xlsx)
    # THEN the answer says the copy happens in the background, and it is pending
    assert BACKGROUND_COPY in version["warnings"]
    assert version["document_storage"]["status"] == "pending"
    assert not any(p.startswith("/v1.0/drives/") for p in graph.paths("PUT"))

    # WHEN the worker runs
    run_checks()
    # THEN the drive holds exactly the uploaded bytes at sheetcalc/<engine>/<version>/<file>
    path = path_of(admin, engine_id, "1.0", "loan-quote.xlsx")
    assert graph.files[(DRIVE["id"], path)] == loan_xlsx
    # AND the version detail shows where
    stored = version_detail(admin, engine_id, version["id"])["document_storage"]
    assert stored["status"] == "stored" and stored["error"] is None and stored["stored_at"]
    assert stored["path"] == path
    assert stored["web_url"] == f"{DRIVE['webUrl']}/{quote(path)}"
    # AND it went in one simple upload, with the bearer token the identity platform issued; the
    # secret went nowhere but the token endpoint
    [put] = uploads_to(graph, path)
    assert put.path.endswith(":/content?@microsoft.graph.conflictBehavior=replace")
    assert put.headers["Authorization"].removeprefix("Bearer ") in graph.tokens
    assert not any(library["client_secret"] in s.path + str(s.headers) for s in graph.seen)


def test_names_are_made_safe_for_sharepoint_and_escaped(admin, library, graph, loan_xlsx, run_checks):
    # A version string and a file name with characters SharePoint refuses, spaces and a '#'
    engine_id, version = upload(admin, loan_xlsx, version="2024/Q1: draft?", filename="Loan quote #1.xlsx")
    run_checks()
    stored = version_detail(admin, engine_id, version["id"])["document_storage"]
    assert stored["status"] == "stored", stored
    assert stored["path"] == path_of(admin, engine_id, "2024_Q1_ draft_", "Loan quote #1.xlsx")
    assert graph.files[(DRIVE["id"], stored["path"])] == loan_xlsx


def test_a_workbook_over_4_mb_goes_through_an_upload_session(admin, library, graph, big_xlsx, run_checks):
    seen_before = len(graph.seen)
    engine_id, version = upload(admin, big_xlsx, filename="big.xlsx")
    run_checks()
    stored = version_detail(admin, engine_id, version["id"])["document_storage"]
    assert stored["status"] == "stored", stored
    assert graph.files[(DRIVE["id"], stored["path"])] == big_xlsx
    calls = graph.seen[seen_before:]
    # a session was created (replacing any file there), never a simple upload of the whole file
    [create] = [c for c in calls if c.path.endswith(":/createUploadSession")]
    assert json.loads(create.body) == {"item": {"@microsoft.graph.conflictBehavior": "replace"}}
    assert not any(c.path.endswith(":/content") for c in calls)
    # the fragments: in order, multiples of 320 KiB but the last, no bearer token on the upload URL
    fragments = [c for c in calls if c.path.startswith("/upload/")]
    assert len(fragments) >= 2
    ranges = [tuple(map(int, c.headers["Content-Range"].removeprefix("bytes ").replace("/", "-").split("-"))) for c in fragments]
    assert ranges[0][0] == 0 and ranges[-1][1] == len(big_xlsx) - 1
    assert all(total == len(big_xlsx) for _, _, total in ranges)
    assert all(a[1] + 1 == b[0] for a, b in zip(ranges, ranges[1:]))
    assert all((end - start + 1) % (320 * 1024) == 0 for start, end, _ in ranges[:-1])
    assert all("Authorization" not in c.headers for c in fragments)


@pytest.mark.parametrize(
    "failure, error",
    [
        ((500, {"error": {"code": "generalException", "message": "Upstream detail: farm SPO-17 is sad"}}),
         "Copying to the document library failed: Microsoft Graph request failed"),
        ((403, {"error": {"code": "accessDenied", "message": "Either scp or roles claim need to be present in the token."}}),
         "Copying to the document library failed: Microsoft Graph refused access: the application needs the "
         "Sites.ReadWrite.All application permission, with admin consent"),
    ],
)
def test_a_graph_failure_is_recorded_and_the_version_stays_usable(client, admin, library, graph, loan_xlsx, run_worker, run_checks, failure, error):
    # GIVEN an activated version and a consumer, and Graph answering errors
    deployed = deploy_loan(admin, loan_xlsx)
    graph.graph_failure = failure
    # WHEN the worker handles the version's message
    run_checks()
    # THEN the copy is recorded failed, with our own message only
    stored = version_detail(admin, deployed.engine_id, deployed.version_id)["document_storage"]
    assert stored["status"] == "failed" and stored["error"] == error and stored["web_url"] is None
    assert "Upstream detail" not in json.dumps(stored) and "roles claim" not in json.dumps(stored)
    # AND the message is done with: nothing is left to retry, no upload is attempted again
    uploads = len(graph.seen)
    assert run_checks() == 0
    assert len(graph.seen) == uploads
    # AND the version calculates
    r = client.post(deployed.execute_path, json={"inputs": {"principal": 1000, "annual_rate": 0.05, "years": 1}},
                    headers={"X-API-Key": deployed.api_key})
    assert r.status_code == 202, r.text
    run_worker()
    job = client.get(f"/jobs/{r.json()['job_id']}", headers={"X-API-Key": deployed.api_key}).json()
    assert job["status"] == "completed", job


def test_an_unknown_drive_is_recorded_as_not_found(admin, library, graph, loan_xlsx, run_checks):
    assert admin.put("/tenant/settings", json={"drive_id": "b!deleted-library"}).status_code == 200
    engine_id, version = upload(admin, loan_xlsx)
    run_checks()
    stored = version_detail(admin, engine_id, version["id"])["document_storage"]
    assert (stored["status"], stored["error"]) == ("failed", "Copying to the document library failed: Drive not found")


@pytest.mark.parametrize("settings", [None, "credentials without a drive"])
def test_without_a_document_library_nothing_is_copied(admin, graph, loan_xlsx, run_checks, settings):
    if settings:
        r = admin.put("/tenant/settings", json={"tenant_id": "contoso.onmicrosoft.com", "client_id": "c", "client_secret": "s"})
        assert r.status_code == 200
    seen_before = len(graph.seen)
    engine_id, version = upload(admin, loan_xlsx)
    assert version["document_storage"]["status"] == "not_configured"
    assert BACKGROUND_COPY not in version["warnings"]
    run_checks()
    assert version_detail(admin, engine_id, version["id"])["document_storage"]["status"] == "not_configured"
    assert len(graph.seen) == seen_before  # no Graph call at all


def test_storage_removed_before_the_worker_runs_is_recorded_not_configured(admin, library, graph, loan_xlsx, run_checks):
    engine_id, version = upload(admin, loan_xlsx)
    assert admin.put("/tenant/settings", json={"drive_id": None}).status_code == 200
    seen_before = len(graph.seen)
    run_checks()
    assert version_detail(admin, engine_id, version["id"])["document_storage"]["status"] == "not_configured"
    assert len(graph.seen) == seen_before


def test_a_redelivered_message_does_not_upload_again(admin, library, graph, loan_xlsx, run_checks):
    # GIVEN a version whose message is delivered twice before the first finishes being handled
    engine_id, version = upload(admin, loan_xlsx)
    queues.enqueue_version_check(uuid.UUID(version["id"]))
    run_checks()
    path = path_of(admin, engine_id, "1.0", "loan-quote.xlsx")
    # THEN the workbook was uploaded once
    assert len(uploads_to(graph, path)) == 1
    first = version_detail(admin, engine_id, version["id"])["document_storage"]
    assert first["status"] == "stored"
    # WHEN the message comes again later
    queues.enqueue_version_check(uuid.UUID(version["id"]))
    assert run_checks() == 1
    # THEN nothing is uploaded and the record is unchanged
    assert len(uploads_to(graph, path)) == 1
    assert version_detail(admin, engine_id, version["id"])["document_storage"] == first


def test_a_copy_that_did_not_finish_is_uploaded_again_replacing_the_first(admin, library, graph, loan_xlsx, run_checks):
    engine_id, version = upload(admin, loan_xlsx)
    run_checks()
    # GIVEN the worker stopped after uploading, before recording (the record is pending again)
    with session_scope() as s:
        s.get(EngineVersion, uuid.UUID(version["id"])).document_storage = {"status": "pending"}
    # WHEN the message is redelivered
    check_in_background(uuid.UUID(version["id"]))
    # THEN the file is uploaded again over the first and recorded
    path = path_of(admin, engine_id, "1.0", "loan-quote.xlsx")
    assert len(uploads_to(graph, path)) == 2
    assert graph.files[(DRIVE["id"], path)] == loan_xlsx
    assert version_detail(admin, engine_id, version["id"])["document_storage"]["status"] == "stored"


def test_a_dead_lettered_message_records_the_copy_as_failed(admin, library, graph, loan_xlsx, run_checks):
    from functions.checks.dlq import handler as dead_letters

    engine_id, version = upload(admin, loan_xlsx)
    event = {"Records": [{
        "messageId": str(uuid.uuid4()), "receiptHandle": "rh", "body": json.dumps({"version_id": version["id"]}),
        "attributes": {"ApproximateReceiveCount": "5"}, "messageAttributes": {}, "md5OfBody": "",
        "eventSource": "aws:sqs", "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:sheetcalc-jobs-dlq", "awsRegion": "us-east-1",
    }]}
    # WHEN the version's message ran out of deliveries before the copy was recorded
    assert dead_letters(event, None) == {"batchItemFailures": []}
    # THEN the copy is failed, and a late delivery of the original uploads nothing
    stored = version_detail(admin, engine_id, version["id"])["document_storage"]
    assert (stored["status"], stored["error"]) == ("failed", "Copying to the document library did not finish")
    run_checks()
    assert graph.files.get((DRIVE["id"], path_of(admin, engine_id, "1.0", "loan-quote.xlsx"))) is None
