"""Reproducible runs: a job records the version's content hash and its calculation engine; NOW and
TODAY answer the job's creation time and RAND/RANDBETWEEN draw from a seed of the job's id, so an
administrator's re-run (POST /engines/{id}/jobs/{job_id}/rerun) gives the same outputs.

The expected values are properties, not numbers of our engine: identical on a re-run, TODAY the
serial of the creation date in Excel's 1900 date system (1900-01-01 is 1, and Excel counts the
nonexistent 1900-02-29, support.microsoft.com "DATE function"), RAND in [0, 1), RANDBETWEEN an
integer within its bounds.
"""

from __future__ import annotations

import hashlib
import io
import uuid
from datetime import date, datetime, timezone

import openpyxl
import pytest
from openpyxl.workbook.defined_name import DefinedName

from shared.db.session import session_scope
from shared.repositories import engines as engine_repo
from shared.repositories import jobs as job_repo
from tests.factories import deploy_loan, make_admin, submit_job


def volatile_workbook() -> bytes:
    """`amount` (input, B1) and outputs using TODAY, NOW, RAND and RANDBETWEEN, one of them on the input."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Calc"
    ws["B1"] = 10
    ws["C1"], ws["C2"], ws["C3"] = "=TODAY()", "=NOW()", "=RAND()"
    ws["C4"], ws["C5"] = "=RANDBETWEEN(1,6)", "=B1*RAND()"
    for name, ref in [("amount", "B1"), ("today", "C1"), ("now", "C2"), ("rand", "C3"), ("dice", "C4"), ("scaled", "C5")]:
        wb.defined_names[name] = DefinedName(name, attr_text=f"Calc!${ref[0]}${ref[1:]}")
    buffer = io.BytesIO()
    wb.save(buffer)
    return buffer.getvalue()


VOLATILE_XLSX = volatile_workbook()


def excel_1900_serial(day: date) -> int:
    # 1900-01-01 is serial 1; every date from 1900-03-01 on is one more for the phantom 1900-02-29.
    return (day - date(1900, 1, 1)).days + 2


def created_at(job: dict) -> datetime:
    stamp = datetime.fromisoformat(job["created_at"].replace("Z", "+00:00"))
    return stamp.astimezone(timezone.utc).replace(tzinfo=None) if stamp.tzinfo else stamp


@pytest.fixture()
def volatile(admin):
    return deploy_loan(admin, VOLATILE_XLSX)


def run_job(admin, deployed, run_worker, inputs: dict) -> dict:
    job_id = submit_job(deployed, inputs)
    run_worker()
    job = admin.get(f"/engines/{deployed.engine_id}/jobs/{job_id}").json()
    assert job["status"] == "completed", job
    return job


def test_a_job_with_today_and_rand_gives_identical_outputs_on_rerun(admin, volatile, run_worker):
    # GIVEN a completed job of a workbook using TODAY, NOW, RAND and RANDBETWEEN
    job = run_job(admin, volatile, run_worker, {"amount": 3})
    out = job["outputs"]
    # THEN it recorded what it was calculated from
    assert job["version_sha256"] == hashlib.sha256(VOLATILE_XLSX).hexdigest()
    assert job["calc_engine"] == "ironcalc"
    # AND TODAY/NOW answer the job's creation time, in Excel's 1900 date system
    created = created_at(job)
    assert out["today"] == excel_1900_serial(created.date())
    seconds = (created - datetime(created.year, created.month, created.day)).total_seconds()
    assert out["now"] == pytest.approx(out["today"] + seconds / 86400, abs=1e-9)
    # AND RAND is in [0, 1), RANDBETWEEN an integer within its bounds, and a cell on an input uses RAND too
    assert 0 <= out["rand"] < 1 and 0 <= out["scaled"] < 3
    assert out["dice"] in (1, 2, 3, 4, 5, 6)

    # WHEN an administrator re-runs it
    r = admin.post(f"/engines/{volatile.engine_id}/jobs/{job['job_id']}/rerun")

    # THEN every output is identical, and the answer says what both runs were calculated from
    assert r.status_code == 200, r.text
    rerun = r.json()
    assert (rerun["identical"], rerun["differing_outputs"], rerun["error_message"]) == (True, [], None)
    assert rerun["outputs"] == rerun["recorded_outputs"] == out
    assert rerun["version_sha256"] == rerun["recorded_version_sha256"] == job["version_sha256"]
    assert rerun["calc_engine"] == rerun["recorded_calc_engine"] == "ironcalc"


def test_each_job_draws_its_own_random_numbers(admin, volatile, run_worker):
    # Seeded by the job id: two jobs with the same inputs do not share their draws (a chance of 2**-53).
    first = run_job(admin, volatile, run_worker, {"amount": 3})["outputs"]
    second = run_job(admin, volatile, run_worker, {"amount": 3})["outputs"]
    assert first["rand"] != second["rand"]
    assert first["scaled"] != second["scaled"]


def test_a_rerun_names_the_outputs_that_differ(admin, volatile, run_worker):
    # GIVEN a job whose recorded outputs no longer match what its inputs calculate to
    job = run_job(admin, volatile, run_worker, {"amount": 3})
    with session_scope() as session:
        row = job_repo.get_job(session, job_id=uuid.UUID(job["job_id"]))
        row.outputs = {**row.outputs, "rand": 2.0, "dice": 7}
    # WHEN it is re-run THEN the answer is not identical and names those outputs
    rerun = admin.post(f"/engines/{volatile.engine_id}/jobs/{job['job_id']}/rerun").json()
    assert (rerun["identical"], rerun["differing_outputs"]) == (False, ["rand", "dice"])
    assert rerun["outputs"]["rand"] == job["outputs"]["rand"]


def test_a_version_from_before_hashes_gets_its_hash_at_rerun(admin, volatile, run_worker):
    job = run_job(admin, volatile, run_worker, {"amount": 1})
    with session_scope() as session:
        version = engine_repo.get_version(session, tenant_id=uuid.UUID(admin.tenant_id), version_id=uuid.UUID(volatile.version_id))
        version.content_sha256 = None
    rerun = admin.post(f"/engines/{volatile.engine_id}/jobs/{job['job_id']}/rerun").json()
    assert rerun["identical"] is True
    assert rerun["version_sha256"] == hashlib.sha256(VOLATILE_XLSX).hexdigest()
    with session_scope() as session:
        version = engine_repo.get_version(session, tenant_id=uuid.UUID(admin.tenant_id), version_id=uuid.UUID(volatile.version_id))
        assert version.content_sha256 == hashlib.sha256(VOLATILE_XLSX).hexdigest()


def test_only_a_completed_job_of_ones_own_engine_can_be_rerun(client, admin, volatile):
    job_id = submit_job(volatile, {"amount": 1})
    r = admin.post(f"/engines/{volatile.engine_id}/jobs/{job_id}/rerun")
    assert (r.status_code, r.json()["detail"]) == (400, "Only a completed job can be re-run. Current status: pending")
    other = make_admin(client)
    r = other.post(f"/engines/{volatile.engine_id}/jobs/{job_id}/rerun")
    assert (r.status_code, r.json()["detail"]) == (404, "Engine not found")
    assert client.post(f"/engines/{volatile.engine_id}/jobs/{job_id}/rerun").status_code == 401
