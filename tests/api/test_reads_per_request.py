"""What the hot consumer requests read and write, counted (not timed): on PostgreSQL each
statement is a round trip, and on both databases each costs SQLAlchemy's work per statement.

An execute reads the engine with its active version, the key's consumer and its access record
for that engine in one statement; a job's status reads the job with its engine, then the consumer
with its access (one statement). The permission checks use that access record, so no
third read is made. An execute writes its job's row and its creation in the daily rollups: on
PostgreSQL in one statement (the INSERT a data-modifying ``WITH`` query ahead of the rollups'
upserts), elsewhere the INSERT, then the upserts.
"""

from __future__ import annotations

import os
import uuid

import pytest

from shared.db.session import session_scope
from shared.repositories import jobs as job_repo
from tests.factories import deploy_loan, submit_job
from tests.statement_counter import counting
from tests.stats.rollups_check import assert_rollups_exact

ON_POSTGRES = bool(os.environ.get("SHEETCALC_TEST_DATABASE_URL"))  # as tests/conftest.py chooses
INPUTS = {"principal": 100000, "annual_rate": 0.05, "years": 10}


@pytest.fixture(autouse=True)
def _brakes_counted_apart(configure):
    # The brakes (a key's request rate, a tenant's quota of unfinished jobs; on by default) add
    # their own statements, counted in tests/api/test_rate_limits.py: here, the request's own.
    configure(consumer_rate_limit=0, tenant_max_unfinished_jobs=0)


def selects(seen) -> list[str]:
    return [" ".join(sql.split())[:60] for sql in seen.sql if sql.lstrip().upper().startswith("SELECT")]


def writes(seen) -> list[str]:
    """The statements that write (savepoints aside), each flattened to one line."""
    return [" ".join(sql.split()) for sql in seen.sql if sql.lstrip().upper().startswith(("INSERT", "UPDATE", "WITH"))]


def counted_execute(client, deployed):
    """One execute after a first one (statements prepared, caches warm): its answer and what it asked."""
    headers = {"X-API-Key": deployed.api_key}
    assert client.post(deployed.execute_path, json={"inputs": INPUTS}, headers=headers).status_code == 202
    with counting() as seen:
        r = client.post(deployed.execute_path, json={"inputs": INPUTS}, headers=headers)
    assert r.status_code == 202, r.text
    return r, seen


def test_an_execute_reads_once_the_engine_its_version_the_key_and_its_access(client, deployed):
    _, seen = counted_execute(client, deployed)
    assert len(selects(seen)) == 1, selects(seen)
    (read,) = [sql for sql in seen.sql if sql.lstrip().upper().startswith("SELECT")]
    assert all(table in read for table in ("engines", "engine_versions", "consumers", "engine_access"))


def test_an_execute_leaves_the_versions_fidelity_report_and_document_storage_unread(client, deployed):
    # They grow with the workbook (mismatches, flagged cells with their formulas) and no consumer
    # request shows them: parsing them on every execute would make big workbooks slower to call.
    headers = {"X-API-Key": deployed.api_key}
    with counting() as seen:
        assert client.post(deployed.execute_path, json={"inputs": INPUTS}, headers=headers).status_code == 202
        assert client.get(f"/jobs/about/{deployed.admin.slug}/{deployed.engine_slug}", headers=headers).status_code == 200
    version_reads = [sql for sql in seen.sql if "engine_versions" in sql and sql.lstrip().upper().startswith("SELECT")]
    assert len(version_reads) == 2, version_reads
    assert all("fidelity_report" not in sql and "document_storage" not in sql for sql in version_reads)


def test_a_job_status_reads_twice_the_job_then_the_key_with_its_access(client, deployed):
    job_id = submit_job(deployed, INPUTS)
    headers = {"X-API-Key": deployed.api_key}
    with counting() as seen:
        r = client.get(f"/jobs/{job_id}", headers=headers)
    assert (r.status_code, r.json()["status"]) == (200, "pending")
    assert len(selects(seen)) == 2, selects(seen)


def test_the_access_read_with_the_key_still_decides(client, admin, loan_xlsx):
    # GIVEN a consumer whose access to the engine does not allow viewing jobs
    flags = {"can_execute": True, "can_view_jobs": False, "can_download": False, "can_view_about": False}
    deployed = deploy_loan(admin, loan_xlsx, flags=flags)
    headers = {"X-API-Key": deployed.api_key}
    job_id = client.post(deployed.execute_path, json={"inputs": INPUTS}, headers=headers).json()["job_id"]
    # WHEN it asks for the job THEN it is refused, from the record read with its key
    r = client.get(f"/jobs/{job_id}", headers=headers)
    assert r.status_code == 403


def test_an_execute_writes_its_job_and_its_rollups_in_one_statement_on_postgresql(client, deployed):
    _, seen = counted_execute(client, deployed)
    written = writes(seen)
    if ON_POSTGRES:
        assert len(written) == 1, written
        assert written[0].startswith("WITH r AS (INSERT INTO jobs (") and "INSERT INTO job_stats_daily" in written[0]
    else:
        assert written[0].startswith("INSERT INTO jobs ("), written
        assert all(sql.startswith("INSERT INTO job_") for sql in written[1:]), written
    # AND the rollups count exactly the jobs there are
    assert_rollups_exact(deployed.admin.tenant_id)


def test_the_job_reads_back_as_the_execute_sent_it(client, deployed):
    headers = {"X-API-Key": deployed.api_key}

    r = client.post(deployed.execute_path, json={"inputs": INPUTS, "webhook_url": "https://example.com/hook"}, headers=headers)

    assert r.status_code == 202, r.text
    with session_scope() as session:
        job = job_repo.get_job(session, job_id=uuid.UUID(r.json()["job_id"]))
        assert (job.status, job.inputs, job.webhook_url, job.is_test) == ("pending", INPUTS, "https://example.com/hook", False)
        assert (job.engine_slug, job.version_id, job.tenant_id) == (deployed.engine_slug, uuid.UUID(deployed.version_id),
                                                                     uuid.UUID(deployed.admin.tenant_id))
        assert job.consumer_id is not None and job.created_at == job.updated_at
