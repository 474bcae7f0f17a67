"""The filled workbook is produced when it is first downloaded, not for every job.

A completed job records where its file will live; the first download (consumer or
administrator) calculates the job's recorded inputs again on its version and stores the file,
and later downloads only sign a link. The file must be the one the worker would have written at
once (``keep_filled_workbooks``): compared cell by cell, values and formulas, through openpyxl.
"""

from __future__ import annotations

import io
import threading
import uuid

import httpx
import openpyxl
import pytest

from shared.adapters.storage import ObjectStore, get_store
from shared.calc import fenced
from shared.db.models import EngineVersion, Job
from shared.db.session import session_scope
from shared.services import job_runner
from shared.services import jobs as job_service
from shared.repositories import tenants as tenant_repo
from shared.services import versions
from tests.factories import submit_job
from tests.worker.test_redelivery_and_webhooks import annuity

# A date input too: the file must carry the input plan's serial, as the worker's did.
INPUTS = {"principal": 250000, "annual_rate": 0.045, "years": 30, "start_date": "2030-06-15"}


def download(client, deployed, job_id) -> httpx.Response:
    return client.get(f"/jobs/{job_id}/download", headers={"X-API-Key": deployed.api_key})


def cells(data: bytes) -> dict:
    """Every cell of every sheet: (computed value, formula or constant)."""
    values, formulas = openpyxl.load_workbook(io.BytesIO(data), data_only=True), openpyxl.load_workbook(io.BytesIO(data))
    return {
        (sheet.title, cell.coordinate): (cell.value, formulas[sheet.title][cell.coordinate].value)
        for sheet in values.worksheets for row in sheet.iter_rows() for cell in row if cell.value is not None
    }


def result_key(job_id) -> str:
    with session_scope() as s:
        return s.get(Job, uuid.UUID(job_id)).result_key


def test_the_file_made_on_download_is_the_file_made_at_once(client, deployed, run_worker, configure):
    # GIVEN one job whose file is kept at once, and one with the same inputs whose file is not
    configure(keep_filled_workbooks="true")
    eager = submit_job(deployed, INPUTS)
    run_worker()
    configure(keep_filled_workbooks="false")
    lazy = submit_job(deployed, INPUTS)
    run_worker()
    assert get_store().exists(result_key(eager))
    assert not get_store().exists(result_key(lazy))
    # WHEN both are downloaded
    files = {}
    for job_id in (eager, lazy):
        r = download(client, deployed, job_id)
        assert r.status_code == 200, r.text
        files[job_id] = httpx.get(r.json()["download_url"]).content
    # THEN the file made on download holds exactly the cells of the one made at once
    assert cells(files[lazy]) == cells(files[eager])
    values = openpyxl.load_workbook(io.BytesIO(files[lazy]), data_only=True)
    sheet, cell = next(iter(values.defined_names["monthly_payment"].destinations))
    assert values[sheet][cell.replace("$", "")].value == pytest.approx(annuity(250000, 0.045, 30), rel=1e-12)
    # AND it is stored now
    assert get_store().exists(result_key(lazy))


def test_a_second_download_does_not_calculate_again(client, deployed, run_worker, admin, monkeypatch):
    job_id = submit_job(deployed, INPUTS)
    run_worker()
    made = []
    real = job_runner.filled_workbook
    monkeypatch.setattr(job_runner, "filled_workbook", lambda job, version: made.append(job.id) or real(job, version))
    first = download(client, deployed, job_id)
    again = download(client, deployed, job_id)
    by_admin = admin.get(f"/engines/{deployed.engine_id}/jobs/{job_id}/download")
    assert [r.status_code for r in (first, again, by_admin)] == [200, 200, 200]
    assert made == [uuid.UUID(job_id)]
    assert httpx.get(by_admin.json()["download_url"]).content == httpx.get(first.json()["download_url"]).content


def test_the_administrators_download_makes_the_file_too(deployed, run_worker, admin):
    job_id = submit_job(deployed, INPUTS)
    run_worker()
    r = admin.get(f"/engines/{deployed.engine_id}/jobs/{job_id}/download")
    assert r.status_code == 200, r.text
    assert httpx.get(r.json()["download_url"]).content[:2] == b"PK"


def test_a_job_whose_version_was_deleted_before_any_download_has_no_file(client, deployed, run_worker, admin, loan_xlsx):
    # GIVEN a completed job never downloaded, and its version deleted (another one active)
    job_id = submit_job(deployed, INPUTS)
    run_worker()
    tenant_id, engine_id = uuid.UUID(admin.tenant_id), uuid.UUID(deployed.engine_id)
    with session_scope() as s:
        tenant = tenant_repo.get_tenant(s, tenant_id=tenant_id)
        newer = versions.upload(s, tenant=tenant, engine_id=engine_id, version="2.0", filename="loan-quote.xlsx", data=loan_xlsx)
        versions.activate(s, tenant_id=tenant_id, engine_id=engine_id, version_id=newer.version.id)
        versions.delete(s, tenant_id=tenant_id, engine_id=engine_id, version_id=uuid.UUID(deployed.version_id))
    # THEN its download is the spec's 404 for a job without a file, for the consumer and the administrator
    r = download(client, deployed, job_id)
    assert (r.status_code, r.json()) == (404, {"detail": "The result file is not available for this job"})
    r = admin.get(f"/engines/{deployed.engine_id}/jobs/{job_id}/download")
    assert (r.status_code, r.json()) == (404, {"detail": "The result file is not available for this job"})


def test_a_job_not_completed_still_answers_400(client, deployed):
    job_id = submit_job(deployed, INPUTS)
    r = download(client, deployed, job_id)
    assert (r.status_code, r.json()) == (400, {"detail": "Job not completed yet. Current status: pending"})


def test_concurrent_first_downloads_calculate_once(deployed, run_worker, monkeypatch):
    # GIVEN a completed job, and a first download held inside its calculation
    job_id = submit_job(deployed, INPUTS)
    run_worker()
    inside, release = threading.Event(), threading.Event()
    checks, made = [], []
    third_check = threading.Event()
    real = job_runner.filled_workbook

    def held(job, version):
        made.append(job.id)
        inside.set()
        assert release.wait(30)
        return real(job, version)

    class Watched(ObjectStore):
        def exists(self, key):
            found = super().exists(key)
            checks.append(found)
            if len(checks) == 3:
                third_check.set()
            return found

    monkeypatch.setattr(job_runner, "filled_workbook", held)
    monkeypatch.setattr(job_service, "get_store", lambda: Watched(get_store().bucket))
    with session_scope() as s:
        job = s.get(Job, uuid.UUID(job_id))
        links = []
        first = threading.Thread(target=lambda: links.append(job_service.result_link(s, job)))
        second = threading.Thread(target=lambda: links.append(job_service.result_link(s, job)))
        first.start()
        assert inside.wait(30)
        # WHEN a second download finds no file while the first is still calculating it
        second.start()
        assert third_check.wait(30)
        release.set()
        first.join(30), second.join(30)
    # THEN the file was calculated once, and both downloads got a link to it
    assert checks[:3] == [False, False, False]
    assert made == [uuid.UUID(job_id)] and len(links) == 2
    assert get_store().exists(result_key(job_id))


def test_the_file_is_made_by_the_engine_that_calculated_the_job(client, deployed, run_worker, monkeypatch):
    # GIVEN a job calculated by IronCalc, and then the version switched to the formulas engine
    job_id = submit_job(deployed, INPUTS)
    run_worker()
    with session_scope() as s:
        assert s.get(Job, uuid.UUID(job_id)).calc_engine == "ironcalc"
        version = s.get(EngineVersion, uuid.UUID(deployed.version_id))
        version.calc_engine = "formulas"
    models = []
    model = job_runner._model
    monkeypatch.setattr(job_runner, "_model", lambda version, engine: models.append(engine) or model(version, engine))
    # WHEN the job is first downloaded
    assert download(client, deployed, job_id).status_code == 200
    # THEN its file came from an IronCalc model of the version, not from the formulas engine
    assert models == ["ironcalc"]
