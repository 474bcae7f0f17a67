"""What an execute writes, counted (not timed): the job's row and its creation in the daily
rollups. On PostgreSQL both go in one statement (one round trip: the INSERT a data-modifying
``WITH`` query ahead of the rollups' upserts); elsewhere the INSERT, then the upserts.
"""

from __future__ import annotations

import os
import uuid

from shared.db.session import session_scope
from shared.repositories import jobs as job_repo
from tests.statement_counter import counting
from tests.stats.rollups_check import assert_rollups_exact

ON_POSTGRES = bool(os.environ.get("SHEETCALC_TEST_DATABASE_URL"))  # as tests/conftest.py chooses
INPUTS = {"principal": 100000, "annual_rate": 0.05, "years": 10}


def writes(seen) -> list[str]:
    """The statements that write (savepoints aside), each flattened to one line."""
    return [" ".join(sql.split()) for sql in seen.sql if sql.lstrip().upper().startswith(("INSERT", "UPDATE", "WITH"))]


def test_an_execute_writes_its_job_and_its_rollups_in_one_statement_on_postgresql(client, deployed):
    headers = {"X-API-Key": deployed.api_key}
    assert client.post(deployed.execute_path, json={"inputs": INPUTS}, headers=headers).status_code == 202  # warm

    with counting() as seen:
        r = client.post(deployed.execute_path, json={"inputs": INPUTS}, headers=headers)

    assert r.status_code == 202, r.text
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
