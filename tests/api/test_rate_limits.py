"""Brakes on consumers: a request rate per API key (X-RateLimit-*, 429 + Retry-After) and
quotas of unfinished jobs per tenant (429 at execute, and at a batch, each its own). On by
default with production values; 0 turns one off.

The rate limit's clock is injected (``clock``); no test waits for a window to pass.
"""

from __future__ import annotations

import os
import uuid
from datetime import datetime, timezone

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from shared.api.app import create_app
from shared.config import Settings
from shared.db.session import new_session, session_scope
from shared.repositories import jobs as job_repo
from shared.errors import TooManyRequests
from shared.services import rate_limits
from shared.services.batches import MAX_INPUT_SETS
from tests.envtools import Clock
from tests.factories import deploy_loan, make_admin, submit_batch
from tests.statement_counter import counting

INPUTS = {"principal": 100000, "annual_rate": 0.05, "years": 10}


@pytest.fixture()
def clock(monkeypatch) -> Clock:
    moved = Clock(datetime(2026, 3, 2, 9, 0, 10, tzinfo=timezone.utc))
    monkeypatch.setattr(rate_limits, "utcnow", moved)
    return moved


def about(client, d, key: str | None = None):
    return client.get(f"/jobs/about/{d.admin.slug}/{d.engine_slug}", headers={"X-API-Key": key or d.api_key})


def execute(client, d, key: str | None = None):
    return client.post(d.execute_path, headers={"X-API-Key": key or d.api_key}, json={"inputs": INPUTS})


def execute_with_test_key(client, d):
    return client.post(f"/jobs/test/{d.admin.slug}/{d.engine_slug}/{d.version_id}", headers={"X-API-Key": d.test_key},
                       json={"inputs": INPUTS})


def rate_headers(r) -> tuple[str | None, str | None, str | None]:
    return r.headers.get("X-RateLimit-Limit"), r.headers.get("X-RateLimit-Remaining"), r.headers.get("X-RateLimit-Reset")


# --- the rate limit per API key ---------------------------------------------------------------


def test_a_key_over_its_rate_is_refused_with_429_until_its_window_ends(client, deployed, clock, configure):
    configure(consumer_rate_limit=3, consumer_rate_window_seconds=60)
    # GIVEN a key allowed 3 requests a minute, 10 s into a minute: each answer says where it stands
    answers = [execute(client, deployed) for _ in range(3)]
    assert [r.status_code for r in answers] == [202, 202, 202]
    assert [rate_headers(r) for r in answers] == [("3", "2", "50"), ("3", "1", "50"), ("3", "0", "50")]

    # WHEN a fourth request comes in the same minute, through another API process
    with TestClient(create_app()) as other:
        r = execute(other, deployed)

    # THEN it is refused: the count is in the database, and the answer says when to retry
    assert r.status_code == 429
    assert r.json() == {"detail": "Rate limit exceeded: 3 requests per 60 seconds for this API key. Retry after 50 seconds."}
    assert r.headers["Retry-After"] == "50"
    assert rate_headers(r) == ("3", "0", "50")

    # AND in the next minute the key has its 3 requests again
    clock.advance(50)
    r = about(client, deployed)
    assert (r.status_code, rate_headers(r)) == (200, ("3", "2", "60"))


def test_every_answer_to_a_valid_key_counts_and_carries_the_headers(client, deployed, clock, configure):
    configure(consumer_rate_limit=2, consumer_rate_window_seconds=1)
    clock.now = clock.now.replace(microsecond=250_000)
    # A job that does not exist is still a request of this key
    r = client.get("/jobs/00000000-0000-4000-8000-000000000000", headers={"X-API-Key": deployed.api_key})
    assert (r.status_code, rate_headers(r)) == (404, ("2", "1", "1"))
    assert about(client, deployed).status_code == 200
    assert about(client, deployed).status_code == 429


def test_a_request_with_a_bad_key_is_not_counted_and_has_no_headers(client, deployed, clock, configure):
    configure(consumer_rate_limit=1)
    for _ in range(3):
        r = about(client, deployed, key=f"{deployed.admin.slug}_00000000-0000-4000-8000-000000000000")
        assert (r.status_code, rate_headers(r)) == (401, (None, None, None))
    assert about(client, deployed).status_code == 200


def test_each_key_has_its_own_count(client, deployed, clock, configure, loan_xlsx):
    configure(consumer_rate_limit=1)
    other = deploy_loan(deployed.admin, loan_xlsx)
    assert about(client, deployed).status_code == 200
    assert about(client, deployed).status_code == 429
    # Another consumer of the same tenant, and a version's test key, are counted apart
    assert about(client, other).status_code == 200
    assert execute_with_test_key(client, deployed).status_code == 202


def test_by_default_a_key_may_make_600_requests_a_minute(client, deployed, clock):
    # GIVEN no rate configured, 10 s into a minute
    # WHEN a key makes its first requests THEN they count against 600 a minute
    answers = [about(client, deployed) for _ in range(3)]
    assert [(r.status_code, rate_headers(r)) for r in answers] == [
        (200, ("600", "599", "50")), (200, ("600", "598", "50")), (200, ("600", "597", "50"))]


def test_the_brakes_are_on_by_default_with_the_documented_values():
    defaults = {name: field.default for name, field in Settings.model_fields.items()}
    assert (defaults["consumer_rate_limit"], defaults["consumer_rate_window_seconds"]) == (600, 60)
    assert (defaults["tenant_max_unfinished_jobs"], defaults["tenant_max_unfinished_batch_jobs"]) == (1000, 10_000)
    assert (defaults["consumer_max_waiters"], defaults["tenant_max_waiters"]) == (8, 32)
    assert (defaults["api_max_job_calls"], defaults["api_max_job_calls_per_tenant"]) == (32, 16)


def test_a_rate_limit_turned_off_has_neither_limit_nor_header(client, deployed, clock, configure):
    configure(consumer_rate_limit=0)
    answers = [about(client, deployed) for _ in range(30)]
    assert {r.status_code for r in answers} == {200}
    assert {rate_headers(r) for r in answers} == {(None, None, None)}


# --- the quota of unfinished jobs per tenant --------------------------------------------------

TOO_MANY_JOBS = {
    "detail": "Too many jobs in progress: this tenant may have 2 jobs pending or processing at once. "
              "Retry when some have finished."
}


def test_a_tenant_with_its_quota_of_unfinished_jobs_gets_429_at_execute(client, deployed, configure, run_worker):
    configure(tenant_max_unfinished_jobs=2)
    # GIVEN two jobs of the tenant still pending (one of them a test-key job)
    assert execute(client, deployed).status_code == 202
    assert execute_with_test_key(client, deployed).status_code == 202

    # WHEN a third is asked for
    r = execute(client, deployed)

    # THEN it is refused with 429, a clear message and a Retry-After
    assert (r.status_code, r.json(), r.headers["Retry-After"]) == (429, TOO_MANY_JOBS, "2")
    # AND reading the tenant's jobs is not refused
    assert about(client, deployed).status_code == 200

    # AND once the jobs have finished, executes are accepted again
    run_worker()
    assert execute(client, deployed).status_code == 202


def test_the_quota_is_per_tenant(client, deployed, configure, loan_xlsx):
    configure(tenant_max_unfinished_jobs=1)
    assert execute(client, deployed).status_code == 202
    assert execute(client, deployed).status_code == 429
    elsewhere = deploy_loan(make_admin(client), loan_xlsx)
    assert execute(client, elsewhere).status_code == 202


def batch(client, d, sets: int):
    return client.post(f"/jobs/batch/{d.admin.slug}/{d.engine_slug}", headers={"X-API-Key": d.api_key},
                       json={"inputs": [INPUTS] * sets})


def test_batches_and_executes_have_quotas_of_their_own(client, deployed, configure):
    # GIVEN a tenant allowed 1 unfinished job of execute and 2 of batches
    configure(tenant_max_unfinished_jobs=1, tenant_max_unfinished_batch_jobs=2)
    # WHEN a batch fills the batch quota THEN the tenant's executes are not refused for it
    assert batch(client, deployed, 2).status_code == 202
    assert execute(client, deployed).status_code == 202
    # AND an execute over its own quota is refused, as before
    assert execute(client, deployed).status_code == 429
    # AND the next batch waits for room in the batch quota: 429, with a clear message and a longer Retry-After
    r = batch(client, deployed, 1)
    assert (r.status_code, r.headers["Retry-After"]) == (429, "10")
    assert r.json() == {"detail": "Too many batch jobs in progress: this tenant may have 2 jobs of batches pending or "
                                  "processing at once, and this batch has 1. Retry when some have finished."}


def test_by_default_a_batch_of_the_largest_size_fits_and_a_second_waits_for_room(deployed):
    tenant_id = uuid.UUID(deployed.admin.tenant_id)
    # GIVEN the default quotas and a tenant with no unfinished batch jobs
    # WHEN a batch of 10,000 jobs asks for room THEN there is room for it
    with session_scope() as session:
        rate_limits.ensure_room_for_a_batch(session, tenant_id=tenant_id, jobs=MAX_INPUT_SETS)
    # AND once a batch is running, another of the largest size is told to retry (429, 10 s) with the figures
    submit_batch(deployed, [INPUTS])
    with session_scope() as session, pytest.raises(TooManyRequests) as refused:
        rate_limits.ensure_room_for_a_batch(session, tenant_id=tenant_id, jobs=MAX_INPUT_SETS)
    assert refused.value.retry_after == 10
    assert "may have 10000 jobs of batches pending or processing at once, and this batch has 10000" in refused.value.message


def test_the_brakes_cost_an_execute_one_counted_write_and_one_count_of_the_tenants_unfinished_jobs(client, deployed):
    # GIVEN the default brakes, and a first execute (statements prepared, caches warm)
    headers = {"X-API-Key": deployed.api_key}
    assert client.post(deployed.execute_path, json={"inputs": INPUTS}, headers=headers).status_code == 202
    # WHEN the key executes again
    with counting() as seen:
        assert client.post(deployed.execute_path, json={"inputs": INPUTS}, headers=headers).status_code == 202
    # THEN what the brakes asked is: the key's count (one upsert), the tenant's row (locked on
    # PostgreSQL, so concurrent executes of one tenant count one after another) and one count
    flat = [" ".join(sql.split()) for sql in seen.sql]
    assert len([sql for sql in flat if sql.startswith("INSERT INTO throttle_counters")]) == 1
    assert len([sql for sql in flat if sql.startswith("SELECT tenants.id FROM tenants")]) == 1
    assert len([sql for sql in flat if sql.startswith("SELECT count(*)") and "FROM jobs" in sql]) == 1


def test_with_a_lease_of_ten_a_process_writes_the_count_once_per_ten_requests(client, deployed, configure):
    configure(consumer_rate_lease=10)
    # GIVEN a first execute (statements prepared, caches warm)
    headers = {"X-API-Key": deployed.api_key}
    assert client.post(deployed.execute_path, json={"inputs": INPUTS}, headers=headers).status_code == 202
    # WHEN the key executes ten times more
    with counting() as seen:
        for _ in range(10):
            assert client.post(deployed.execute_path, json={"inputs": INPUTS}, headers=headers).status_code == 202
    # THEN the key's count took one upsert (the process reserved 10 requests of the window at
    # once); each execute still locked the tenant's row and counted its unfinished jobs
    flat = [" ".join(sql.split()) for sql in seen.sql]
    assert len([sql for sql in flat if sql.startswith("INSERT INTO throttle_counters")]) == 1
    assert len([sql for sql in flat if sql.startswith("SELECT tenants.id FROM tenants")]) == 10
    assert len([sql for sql in flat if sql.startswith("SELECT count(*)") and "FROM jobs" in sql]) == 10


def test_requests_another_process_reserved_are_lost_to_the_window_never_allowed_twice(client, deployed, clock, configure):
    configure(consumer_rate_limit=40, consumer_rate_lease=10)
    # GIVEN one API process that reserved 2 requests of a 40-a-minute key (its lease: 2, a twentieth)
    assert about(client, deployed).status_code == 200
    # AND another process (its reservations forgotten here) that uses the rest of the window
    rate_limits.forget_leases()
    answers = [about(client, deployed).status_code for _ in range(40)]
    # THEN the second process had the 38 the first did not reserve, and no more
    assert answers.count(200) == 38 and answers[38:] == [429, 429]


def test_once_the_count_reaches_the_limit_the_window_is_refused_without_writing(client, deployed, clock, configure):
    configure(consumer_rate_limit=2)
    assert [about(client, deployed).status_code for _ in range(2)] == [200, 200]
    with counting() as seen:
        assert [about(client, deployed).status_code for _ in range(5)] == [429] * 5
    assert not [sql for sql in seen.sql if "throttle_counters" in sql]


@pytest.mark.own_transactions
@pytest.mark.skipif(not os.environ.get("SHEETCALC_TEST_DATABASE_URL"), reason="row locks: PostgreSQL")
def test_counting_a_tenants_jobs_does_not_hold_back_a_writer_naming_the_tenant(admin):
    # GIVEN an execute counting its tenant's unfinished jobs, the tenant's row locked until it commits
    tenant_id = uuid.UUID(admin.tenant_id)
    with new_session() as counting_session, new_session() as writer:
        job_repo.count_unfinished(counting_session, tenant_id=tenant_id)
        # WHEN another transaction writes a row naming the tenant (a worker's rollups: its foreign
        # key check locks the tenant's row FOR KEY SHARE)
        writer.execute(text("SET LOCAL lock_timeout = '30s'"))
        checked = writer.execute(text("SELECT 1 FROM tenants WHERE id = :id FOR KEY SHARE"), {"id": tenant_id}).scalar()
        # THEN it does not wait for the count's transaction (FOR UPDATE made it wait, and with
        # the execute then waiting for the worker's rollup rows, PostgreSQL found a deadlock)
        assert checked == 1
        writer.rollback()
        counting_session.rollback()


def test_the_openapi_document_describes_the_headers_and_the_429(client):
    paths = client.get("/openapi.json").json()["paths"]
    execute_answers = paths["/jobs/execute/{tenant_slug}/{engine_slug}"]["post"]["responses"]
    assert set(execute_answers["202"]["headers"]) == {"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"}
    assert set(execute_answers["429"]["headers"]) == {"Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"}
    assert "X-RateLimit-Reset" in paths["/jobs/{job_id}"]["get"]["responses"]["200"]["headers"]
