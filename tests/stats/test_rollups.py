"""The daily rollups behind the statistics: exact through the job life cycle, and the same answers as the jobs.

The rollups are checked against the tenant's jobs added up in Python (``rollups_check``) after
every step of the real path: API execute -> queue -> worker, failures, dead letters and
redeliveries. Periods with partial days at their edges are answered from rollups and jobs
together, and must give exactly what the jobs alone give.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import pytest
from fastapi.testclient import TestClient

from shared.db.session import session_scope
from shared.repositories import jobs as job_repo
from shared.repositories import stats as repo
from shared.repositories.stats import Days, Scope, pieces
from shared.services import job_runner
from tests.factories import create_tenant, sign_in
from tests.stats.rollups_check import assert_rollups_exact
from tests.stats.test_stats import Ref, add_consumer, add_engine, add_job, add_version, at
from tests.worker.test_redelivery_and_webhooks import sqs_event

INPUTS = {"principal": 250000, "annual_rate": 0.045, "years": 30}


def submit(client, deployed, *, test_key=False) -> str:
    if test_key:
        path, key = f"/jobs/test/{deployed.admin.slug}/{deployed.engine_slug}/{deployed.version_id}", deployed.test_key
    else:
        path, key = deployed.execute_path, deployed.api_key
    r = client.post(path, json={"inputs": INPUTS}, headers={"X-API-Key": key})
    assert r.status_code == 202, r.text
    return r.json()["job_id"]


def summary(deployed) -> tuple:
    s = deployed.admin.get("/tenant/stats").json()["summary"]
    return s["total_calls"], s["successful_calls"], s["failed_calls"], s["test_calls"]


@pytest.fixture()
def jobs_alone(monkeypatch):
    """Answer every period from the jobs alone (no rollups): the reference."""
    return lambda: monkeypatch.setattr(repo, "pieces", lambda scope: [scope])


# --- the job life cycle -----------------------------------------------------------------------


def test_rollups_follow_execute_complete_and_fail(client, deployed, run_worker, jobs_alone):
    # GIVEN two jobs queued through the API: counted at once, as pending
    submit(client, deployed), submit(client, deployed)
    rows = assert_rollups_exact(deployed.admin.tenant_id)
    assert [(r["total_calls"], r["completed_calls"]) for r in rows["job_stats_daily"].values()] == [(2, 0)]
    assert summary(deployed) == (2, 0, 0, 0)
    # WHEN the worker completes them
    assert run_worker() == 2
    assert_rollups_exact(deployed.admin.tenant_id)
    assert summary(deployed) == (2, 2, 0, 0)
    # AND a third fails to calculate, and a test-key job completes
    original = job_runner._calculate

    def broken(job, version, workbook):
        raise ValueError("cannot")

    job_runner._calculate = broken
    try:
        submit(client, deployed)
        run_worker()
    finally:
        job_runner._calculate = original
    submit(client, deployed, test_key=True)
    run_worker()
    # THEN the rollups still hold exactly what the jobs add up to
    rows = assert_rollups_exact(deployed.admin.tenant_id)
    assert sum(r["timed_calls"] for r in rows["job_stats_daily"].values()) == 3
    assert summary(deployed) == (4, 3, 1, 1)
    # AND the answers, percentiles included, are those of the jobs alone
    answer = deployed.admin.get("/tenant/stats").json()
    engine = deployed.admin.get(f"/engines/{deployed.engine_id}/stats").json()
    jobs_alone()
    assert deployed.admin.get("/tenant/stats").json() == answer
    assert deployed.admin.get(f"/engines/{deployed.engine_id}/stats").json() == engine


def test_dead_letter_counts_the_failure_once(client, deployed, run_worker):
    # GIVEN a queued job, and another one a worker claimed and then lost
    pending, claimed = submit(client, deployed), submit(client, deployed)
    with session_scope() as s:
        claimed_at = job_repo.claim_for_processing(s, job_id=uuid.UUID(claimed), lease_seconds=300)
    # WHEN both are dead-lettered, twice over
    for _ in range(2):
        job_runner.fail_dead_lettered(pending)
        job_runner.fail_dead_lettered(claimed)
    # AND the lost worker tries to finish its job afterwards, and the queued messages are delivered
    with session_scope() as s:
        assert not job_repo.finish(s, job_id=uuid.UUID(claimed), claimed_at=claimed_at, status="completed", execution_time_ms=7)
    run_worker()
    # THEN each counts once, as failed
    assert_rollups_exact(deployed.admin.tenant_id)
    assert summary(deployed) == (2, 0, 2, 0)


def test_redelivery_does_not_count_twice(client, deployed, run_worker):
    from functions.worker.app import handler

    job_id = submit(client, deployed)
    run_worker()
    before = assert_rollups_exact(deployed.admin.tenant_id)
    # WHEN the message comes again
    assert handler(sqs_event(job_id, receive_count=2), None) == {"batchItemFailures": []}
    # THEN nothing moves
    assert assert_rollups_exact(deployed.admin.tenant_id) == before
    # AND when a claim goes stale and a second worker takes the job over, only one finish counts
    other = uuid.UUID(submit(client, deployed))
    with session_scope() as s:
        first = job_repo.claim_for_processing(s, job_id=other, lease_seconds=300)
    with session_scope() as s:
        second = job_repo.claim_for_processing(s, job_id=other, lease_seconds=-1)  # the first claim looks stale
    with session_scope() as s:
        assert job_repo.finish(s, job_id=other, claimed_at=second, status="completed", execution_time_ms=11)
        assert not job_repo.finish(s, job_id=other, claimed_at=first, status="completed", execution_time_ms=99)
    run_worker()
    assert_rollups_exact(deployed.admin.tenant_id)
    assert summary(deployed) == (2, 2, 0, 0)


# --- periods with partial days: rollups and jobs together -------------------------------------


@pytest.fixture(scope="module")
def edges(app, local_aws):
    """Jobs over four days, on the days' very edges and in between; an engine renamed, then deleted."""
    tenant = create_tenant()
    tid = uuid.UUID(tenant["tenant_id"])
    with session_scope() as s:
        e1 = add_engine(s, tid, "Quote", "quote")
        v1 = add_version(s, e1, "1.0")
        e1.active_version_id = v1.id
        c1, c2 = add_consumer(s, tid, "Shop"), add_consumer(s, tid, "Batch", archived=True)
        E1, V1, C1, C2 = Ref(e1.id, "Quote", "quote"), Ref(v1.id, "1.0"), Ref(c1.id, "Shop"), Ref(c2.id, "Batch")
        gone = uuid.uuid4()
        names = ["First", "Second", "Third", "Fourth"]
        gone_version, old_version = Ref(uuid.uuid4(), "9.9"), Ref(uuid.uuid4(), "0.1")
        day0 = datetime(2026, 5, 1, tzinfo=timezone.utc)
        offsets = [timedelta(0), timedelta(hours=6), timedelta(hours=12, microseconds=1), timedelta(hours=23, minutes=59, seconds=59, microseconds=999999)]
        n = 0
        for d in range(4):
            for k, offset in enumerate(offsets):
                created = (day0 + timedelta(days=d) + offset).replace(tzinfo=None).isoformat()
                n += 1
                status = ("completed", "completed", "failed", "pending", "completed")[n % 5]
                ms = (n * 37) % 50 + 1 if status == "completed" else None
                # the deleted engine changes its recorded name every six hours or so
                gone_ref = Ref(gone, f"{names[k]} {d}", f"slug-{d}-{k}")
                add_job(s, tid, created=created, engine=E1, version=V1 if n % 3 else old_version, consumer=C1 if n % 2 else C2, status=status, ms=ms)
                add_job(s, tid, created=created, engine=gone_ref, version=gone_version, consumer=None if n % 4 == 0 else C2, status=status, ms=ms and ms + 3)
    client = TestClient(app)
    yield sign_in(client, tenant), e1.id, c1.id, c2.id
    client.close()


def _periods():
    day = lambda d: datetime(2026, 5, d, tzinfo=timezone.utc)  # noqa: E731
    us = timedelta(microseconds=1)
    yield None, None
    yield day(1), day(4) + timedelta(days=1) - us  # whole days only
    yield day(1) + timedelta(hours=6), None  # partial first day, open end
    yield None, day(3) + timedelta(hours=12)  # open start, partial last day
    yield day(1) + timedelta(hours=6), day(4) + timedelta(hours=12)  # partial at both ends
    yield day(1) + us, day(4) - us  # one microsecond in from both edges
    yield day(2), day(3)  # the end is exactly a midnight: one instant of 3 May
    yield day(2) - us, day(2) + timedelta(hours=6)  # the last instant of a day, then part of the next
    yield day(3) + timedelta(hours=1), day(3) + timedelta(hours=13)  # inside one day
    yield day(2) + timedelta(hours=12), day(3) + timedelta(hours=12)  # two partial days, no whole one


def _bound(value):
    return None if value is None else value.isoformat().replace("+00:00", "Z")


@pytest.mark.parametrize("start,end", list(_periods()))
def test_partial_days_give_what_the_jobs_alone_give(edges, jobs_alone, start, end):
    admin, engine_id, c1, c2 = edges
    params = {k: v for k, v in (("start_date", _bound(start)), ("end_date", _bound(end))) if v is not None}
    paths = ["/tenant/stats", f"/engines/{engine_id}/stats", f"/consumers/{c1}/stats", f"/consumers/{c2}/stats"]
    mixed = [admin.get(p, params=params).json() for p in paths]
    jobs_alone()
    alone = [admin.get(p, params=params).json() for p in paths]
    assert mixed == alone
    assert mixed[0]["summary"]["total_calls"] > 0


def test_partial_days_by_hand(edges):
    # 1 May 06:00 .. 4 May 12:00: whole days 2 and 3 from the rollups, the rest from the jobs.
    # Of each day's four instants (00:00, 06:00, 12:00:00.000001, 23:59:59.999999) 1 May keeps
    # three and 4 May two (12:00:00.000001 is after the end): 2 engines x (3 + 4 + 4 + 2) jobs.
    admin = edges[0]
    body = admin.get("/tenant/stats", params={"start_date": "2026-05-01T06:00:00Z", "end_date": "2026-05-04T12:00:00Z"}).json()
    assert body["summary"]["total_calls"] == 26
    assert [(d["date"], d["total_calls"]) for d in body["by_day"]] == [
        ("2026-05-01", 6), ("2026-05-02", 8), ("2026-05-03", 8), ("2026-05-04", 4),
    ]
    # the deleted engine under the name of its latest job in the period: 4 May 06:00
    deleted = [e for e in body["by_engine"] if e["is_deleted"]]
    assert [(e["engine_name"], e["engine_slug"]) for e in deleted] == [("Second 3", "slug-3-1")]
    # and with the period ending on a whole day, the latest job is in the rollups: 3 May 23:59:59.999999
    body = admin.get("/tenant/stats", params={"start_date": "2026-05-01T06:00:00Z", "end_date": "2026-05-03"}).json()
    assert [e["engine_name"] for e in body["by_engine"] if e["is_deleted"]] == ["Fourth 2"]


def test_pieces_cut_a_period_at_whole_days():
    tid = uuid.uuid4()
    scope = Scope(tenant_id=tid, start=at("2026-05-01T06:00:00"), end=at("2026-05-04T12:00:00"))
    assert pieces(scope) == [
        Scope(tenant_id=tid, start=at("2026-05-01T06:00:00"), end=at("2026-05-01T23:59:59.999999")),
        Days(datetime(2026, 5, 2).date(), datetime(2026, 5, 3).date()),
        Scope(tenant_id=tid, start=at("2026-05-04T00:00:00"), end=at("2026-05-04T12:00:00")),
    ]
    assert pieces(Scope(tenant_id=tid)) == [Days(None, None)]
    whole = Scope(tenant_id=tid, start=at("2026-05-01T00:00:00"), end=at("2026-05-01T23:59:59.999999"))
    assert pieces(whole) == [Days(datetime(2026, 5, 1).date(), datetime(2026, 5, 1).date())]
    inside = Scope(tenant_id=tid, start=at("2026-05-01T01:00:00"), end=at("2026-05-02T01:00:00"))
    assert pieces(inside) == [inside]
