"""Usage statistics: hand-built job sets with answers worked out by hand.

The jobs are inserted directly with SQLAlchemy, so every edge (deleted engines and versions,
archived consumers, test-key jobs, pending work, failed jobs without a time, jobs on the very
edge of a period) is exactly as written here. The expected values are literals, so the same
test passing on SQLite and on PostgreSQL proves the two databases agree.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, literal_column, select

from shared.db.models import Consumer, Engine, EngineVersion, Job
from shared.db.session import session_scope
from shared.repositories import jobs as job_repo
from shared.repositories.stats import Scope, add_up, by_day, percentiles
from tests.factories import create_tenant, sign_in


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


# --- factories --------------------------------------------------------------------------------


def add_engine(session, tenant_id, name, slug):
    engine = Engine(tenant_id=tenant_id, name=name, slug=slug, ip_whitelist=[])
    session.add(engine)
    session.flush()
    return engine


def add_version(session, engine, version):
    row = EngineVersion(
        tenant_id=engine.tenant_id, engine_id=engine.id, version=version, filename="w.xlsx", file_size=1,
        workbook_key=f"k/{uuid.uuid4()}", named_ranges=[], test_key_hash=uuid.uuid4().hex,
    )
    session.add(row)
    session.flush()
    return row


def add_consumer(session, tenant_id, name, *, archived=False):
    consumer = Consumer(
        tenant_id=tenant_id, name=name, api_key_hash=uuid.uuid4().hex, api_key_hint="x_...abcd",
        is_archived=archived, is_active=not archived,
    )
    session.add(consumer)
    session.flush()
    return consumer


@dataclass
class Ref:
    """What a job records about an engine, version or consumer (they may no longer exist)."""

    id: uuid.UUID
    name: str
    slug: str = ""


def add_job(session, tenant_id, *, created, engine: Ref, version: Ref, consumer: Ref | None, status, ms=None):
    job_repo.add(
        session,
        Job(
            tenant_id=tenant_id, engine_id=engine.id, engine_name=engine.name, engine_slug=engine.slug,
            version_id=version.id, version=version.name,
            consumer_id=consumer.id if consumer else None, consumer_name=consumer.name if consumer else None,
            is_test=consumer is None, status=status, inputs={}, execution_time_ms=ms,
            created_at=at(created), updated_at=at(created),
        )
    )


# --- the world --------------------------------------------------------------------------------


@dataclass
class World:
    a: object  # Admin of tenant A (the hand-built jobs)
    b: object  # Admin of tenant B (one engine, one consumer, jobs on the same days)
    e1: uuid.UUID  # "Loan quote", exists, active version 1.0
    e2: uuid.UUID  # deleted; recorded first as "Older name", then "Old engine"
    v1: uuid.UUID
    v2: uuid.UUID
    v0: uuid.UUID  # deleted version "0.9"
    c1: uuid.UUID  # "Website" (its early jobs recorded "Web")
    c2: uuid.UUID  # "Batch", archived
    b_engine: uuid.UUID
    b_consumer: uuid.UUID


@pytest.fixture(scope="module")
def world(app, local_aws) -> World:
    client = TestClient(app)
    ta, tb = create_tenant(), create_tenant()
    with session_scope() as s:
        tid = uuid.UUID(ta["tenant_id"])
        e1 = add_engine(s, tid, "Loan quote", "loan-quote")
        v1, v2 = add_version(s, e1, "1.0"), add_version(s, e1, "2.0")
        e1.active_version_id = v1.id
        c1 = add_consumer(s, tid, "Website")
        c2 = add_consumer(s, tid, "Batch", archived=True)
        E1, V1, V2 = Ref(e1.id, "Loan quote", "loan-quote"), Ref(v1.id, "1.0"), Ref(v2.id, "2.0")
        V0 = Ref(uuid.uuid4(), "0.9")  # a version of E1 that was deleted
        e2_id, ve2 = uuid.uuid4(), Ref(uuid.uuid4(), "3.1")  # an engine that was deleted
        E2_then, E2 = Ref(e2_id, "Older name", "older-name"), Ref(e2_id, "Old engine", "old-engine")
        C1_then, C1, C2 = Ref(c1.id, "Web"), Ref(c1.id, "Website"), Ref(c2.id, "Batch")
        jobs = [
            ("j0", "2026-02-28T10:00:00", E2_then, ve2, C1_then, "completed", 50),
            ("j1", "2026-03-01T00:00:00", E1, V1, C1, "completed", 10),
            ("j2", "2026-03-01T12:00:00", E1, V1, C1, "completed", 20),
            ("j3", "2026-03-01T23:59:59.999999", E1, V2, C2, "failed", None),
            ("j4", "2026-03-02T08:00:00", E1, V0, C2, "completed", 40),
            ("j5", "2026-03-02T09:00:00", E2, ve2, C1, "completed", 35),
            ("j6", "2026-03-02T10:00:00", E2, ve2, None, "completed", 5),  # test key
            ("j7", "2026-03-02T11:00:00", E1, V1, C1, "pending", None),
            ("j8", "2026-03-02T11:30:00", E1, V1, C1, "processing", None),
            ("j9", "2026-03-03T00:00:00", E1, V1, C2, "failed", None),
        ]
        for _, created, engine, version, consumer, status, ms in jobs:
            add_job(s, tid, created=created, engine=engine, version=version, consumer=consumer, status=status, ms=ms)

        bid = uuid.UUID(tb["tenant_id"])
        eb, cb = add_engine(s, bid, "Loan quote", "loan-quote"), add_consumer(s, bid, "Website")
        vb = add_version(s, eb, "1.0")
        for created in ("2026-03-01T12:00:00", "2026-03-02T12:00:00"):
            add_job(s, bid, created=created, engine=Ref(eb.id, eb.name, eb.slug), version=Ref(vb.id, "1.0"),
                    consumer=Ref(cb.id, cb.name), status="completed", ms=1000)
        ids = dict(e1=e1.id, v1=v1.id, v2=v2.id, c1=c1.id, c2=c2.id, b_engine=eb.id, b_consumer=cb.id)
    world = World(a=sign_in(client, ta), b=sign_in(client, tb), e2=e2_id, v0=V0.id, **ids)
    yield world
    client.close()


def ok(admin, path, **params):
    r = admin.get(path, params=params)
    assert r.status_code == 200, r.text
    return r.json()


def counts(item):
    return (item["total_calls"], item["successful_calls"], item["failed_calls"])


# --- tenant ---------------------------------------------------------------------------------


def test_tenant_stats_over_everything(world):
    # WHEN the tenant asks for all time
    body = ok(world.a, "/tenant/stats")
    # THEN every job counts once: 6 completed, 2 failed, 1 pending and 1 processing (total only)
    assert body["tenant_id"] == world.a.tenant_id
    assert body["period"] == {"start_date": None, "end_date": None}
    assert body["summary"] == {
        "total_calls": 10, "successful_calls": 6, "failed_calls": 2, "success_rate": 60.0,
        "avg_execution_time_ms": 26.67,  # (50+10+20+40+35+5)/6
        "test_calls": 1,
        # times sorted 5 10 20 35 40 50; p50 at rank 2.5, p95 at 4.75, p99 at 4.95 (0-based)
        "p50_execution_time_ms": 27.5, "p95_execution_time_ms": 47.5, "p99_execution_time_ms": 49.5,
    }
    assert [(d["date"], *counts(d), d["avg_execution_time_ms"]) for d in body["by_day"]] == [
        ("2026-02-28", 1, 1, 0, 50.0),
        ("2026-03-01", 3, 2, 1, 15.0),
        ("2026-03-02", 5, 3, 0, 26.67),
        ("2026-03-03", 1, 0, 1, None),
    ]
    # the deleted engine still counts, under the name its latest job recorded
    assert body["by_engine"] == [
        {"engine_id": str(world.e1), "engine_name": "Loan quote", "engine_slug": "loan-quote", "active_version_slug": "1.0",
         "is_deleted": False, "total_calls": 7, "successful_calls": 3, "failed_calls": 2, "success_rate": 42.86,
         "avg_execution_time_ms": 23.33},
        {"engine_id": str(world.e2), "engine_name": "Old engine", "engine_slug": "old-engine", "active_version_slug": None,
         "is_deleted": True, "total_calls": 3, "successful_calls": 3, "failed_calls": 0, "success_rate": 100.0,
         "avg_execution_time_ms": 30.0},
    ]
    # the archived consumer still counts under its name; the test-key job is no consumer
    assert body["by_consumer"] == [
        {"consumer_id": str(world.c1), "consumer_name": "Website", "is_archived": False, "total_calls": 6,
         "successful_calls": 4, "failed_calls": 0, "success_rate": 66.67, "avg_execution_time_ms": 28.75},
        {"consumer_id": str(world.c2), "consumer_name": "Batch", "is_archived": True, "total_calls": 3,
         "successful_calls": 1, "failed_calls": 2, "success_rate": 33.33, "avg_execution_time_ms": 40.0},
    ]
    assert sum(c["total_calls"] for c in body["by_consumer"]) + body["summary"]["test_calls"] == 10


def test_one_day_period_includes_both_edges_of_the_day(world):
    # GIVEN jobs at 00:00:00 and 23:59:59.999999 on 1 March, and at 00:00:00 on 3 March
    body = ok(world.a, "/tenant/stats", start_date="2026-03-01", end_date="2026-03-01")
    # THEN the day means the whole UTC day, and the period says so
    assert body["period"] == {"start_date": "2026-03-01T00:00:00Z", "end_date": "2026-03-01T23:59:59.999999Z"}
    assert counts(body["summary"]) == (3, 2, 1)
    assert [d["date"] for d in body["by_day"]] == ["2026-03-01"]
    assert body["summary"]["p50_execution_time_ms"] == 15.0 and body["summary"]["p99_execution_time_ms"] == 19.9
    # a day later: neither 1 March's last microsecond nor 3 March's first instant
    body = ok(world.a, "/tenant/stats", start_date="2026-03-02", end_date="2026-03-02")
    assert counts(body["summary"]) == (5, 3, 0)


def test_datetime_bounds_are_inclusive_and_naive_means_utc(world):
    # 12:00Z written as 13:00+01:00; the end is exactly j4's instant, naive, so UTC
    body = ok(world.a, "/tenant/stats", start_date="2026-03-01T13:00:00+01:00", end_date="2026-03-02T08:00:00")
    assert body["period"] == {"start_date": "2026-03-01T12:00:00Z", "end_date": "2026-03-02T08:00:00Z"}
    assert counts(body["summary"]) == (3, 2, 1)  # j2, j3, j4
    # open at one end
    body = ok(world.a, "/tenant/stats", start_date="2026-03-02T11:00:00Z")
    assert body["period"] == {"start_date": "2026-03-02T11:00:00Z", "end_date": None}
    assert counts(body["summary"]) == (3, 0, 1)  # j7 pending, j8 processing, j9 failed


def test_a_name_is_the_one_recorded_in_the_period(world):
    # on 28 February the deleted engine was still called "Older name"; a consumer's current name wins
    body = ok(world.a, "/tenant/stats", end_date="2026-02-28")
    assert [(e["engine_name"], e["engine_slug"], e["is_deleted"]) for e in body["by_engine"]] == [("Older name", "older-name", True)]
    assert [c["consumer_name"] for c in body["by_consumer"]] == ["Website"]


def test_empty_period_is_zeros_not_errors(world):
    body = ok(world.a, "/tenant/stats", start_date="2025-01-01", end_date="2025-01-31")
    assert body["summary"] == {
        "total_calls": 0, "successful_calls": 0, "failed_calls": 0, "success_rate": 0.0, "avg_execution_time_ms": None,
        "test_calls": 0, "p50_execution_time_ms": None, "p95_execution_time_ms": None, "p99_execution_time_ms": None,
    }
    assert (body["by_day"], body["by_engine"], body["by_consumer"]) == ([], [], [])
    body = ok(world.a, f"/engines/{world.e1}/stats", start_date="2025-01-01", end_date="2025-01-31")
    assert counts(body["summary"]) == (0, 0, 0) and body["by_version"] == [] and body["by_consumer"] == []
    body = ok(world.a, f"/consumers/{world.c1}/stats", start_date="2027-01-01")
    assert body["summary"] == {"total_calls": 0, "successful_calls": 0, "failed_calls": 0, "success_rate": 0.0, "avg_execution_time_ms": None}


# --- engine -----------------------------------------------------------------------------------


def test_engine_stats(world):
    body = ok(world.a, f"/engines/{world.e1}/stats")
    assert (body["engine_id"], body["engine_name"], body["engine_slug"]) == (str(world.e1), "Loan quote", "loan-quote")
    assert body["summary"] == {
        "total_calls": 7, "successful_calls": 3, "failed_calls": 2, "success_rate": 42.86, "avg_execution_time_ms": 23.33,
        "test_calls": 0,
        # times 10 20 40: p50 at rank 1, p95 at 1.9, p99 at 1.98
        "p50_execution_time_ms": 20.0, "p95_execution_time_ms": 38.0, "p99_execution_time_ms": 39.6,
    }
    assert [(c["consumer_name"], *counts(c), c["success_rate"], c["is_archived"]) for c in body["by_consumer"]] == [
        ("Website", 4, 2, 0, 50.0, False),
        ("Batch", 3, 1, 2, 33.33, True),
    ]
    assert [(d["date"], *counts(d), d["avg_execution_time_ms"]) for d in body["by_day"]] == [
        ("2026-03-01", 3, 2, 1, 15.0),
        ("2026-03-02", 3, 1, 0, 40.0),
        ("2026-03-03", 1, 0, 1, None),
    ]
    # the deleted version keeps its version string
    assert body["by_version"] == [
        {"version_id": str(world.v1), "version": "1.0", "is_active": True, "is_deleted": False, "total_calls": 5,
         "successful_calls": 2, "failed_calls": 1, "success_rate": 40.0, "avg_execution_time_ms": 15.0},
        {"version_id": str(world.v0), "version": "0.9", "is_active": False, "is_deleted": True, "total_calls": 1,
         "successful_calls": 1, "failed_calls": 0, "success_rate": 100.0, "avg_execution_time_ms": 40.0},
        {"version_id": str(world.v2), "version": "2.0", "is_active": False, "is_deleted": False, "total_calls": 1,
         "successful_calls": 0, "failed_calls": 1, "success_rate": 0.0, "avg_execution_time_ms": None},
    ]


def test_deleted_or_unknown_engine_is_404(world):
    for engine_id in (world.e2, uuid.uuid4()):
        r = world.a.get(f"/engines/{engine_id}/stats")
        assert (r.status_code, r.json()) == (404, {"detail": "Engine not found"})


# --- consumer ---------------------------------------------------------------------------------


def test_archived_consumer_keeps_its_stats(world):
    body = ok(world.a, f"/consumers/{world.c2}/stats")
    assert (body["consumer_id"], body["consumer_name"], body["is_archived"]) == (str(world.c2), "Batch", True)
    assert body["summary"] == {"total_calls": 3, "successful_calls": 1, "failed_calls": 2, "success_rate": 33.33, "avg_execution_time_ms": 40.0}
    assert [(e["engine_name"], *counts(e)) for e in body["by_engine"]] == [("Loan quote", 3, 1, 2)]
    assert [(d["date"], *counts(d)) for d in body["by_day"]] == [
        ("2026-03-01", 1, 0, 1), ("2026-03-02", 1, 1, 0), ("2026-03-03", 1, 0, 1),
    ]


def test_consumer_stats_cross_deleted_engines(world):
    body = ok(world.a, f"/consumers/{world.c1}/stats", start_date="2026-03-02")
    assert counts(body["summary"]) == (3, 1, 0)  # j5 on the deleted engine, j7 pending, j8 processing
    assert [(e["engine_name"], e["is_deleted"], *counts(e)) for e in body["by_engine"]] == [
        ("Loan quote", False, 2, 0, 0), ("Old engine", True, 1, 1, 0),
    ]
    r = world.a.get(f"/consumers/{uuid.uuid4()}/stats")
    assert (r.status_code, r.json()) == (404, {"detail": "Consumer not found"})


# --- isolation, validation, authentication ----------------------------------------------------


def test_tenants_never_see_each_other(world):
    # tenant B's own figures hold only its two jobs, though they share days with A's
    body = ok(world.b, "/tenant/stats")
    assert counts(body["summary"]) == (2, 2, 0) and body["summary"]["p50_execution_time_ms"] == 1000.0
    assert [e["engine_id"] for e in body["by_engine"]] == [str(world.b_engine)]
    assert counts(ok(world.b, f"/engines/{world.b_engine}/stats")["summary"]) == (2, 2, 0)
    # and A's ids are not there for B
    for path in (f"/engines/{world.e1}/stats", f"/engines/{world.e2}/stats", f"/consumers/{world.c1}/stats", f"/consumers/{world.c2}/stats"):
        assert world.b.get(path).status_code == 404
    # nor B's jobs in A's figures
    assert ok(world.a, "/tenant/stats", start_date="2026-03-01", end_date="2026-03-02")["summary"]["total_calls"] == 8


@pytest.mark.parametrize(
    "params",
    [
        {"start_date": "yesterday"},
        {"start_date": "2026/03/01"},
        {"end_date": "2026-13-01"},
        {"end_date": "2026-02-30"},
        {"start_date": "20260301"},
        {"start_date": "2026-03-01T25:00:00"},
        {"start_date": ""},
        {"start_date": "2026-03-02", "end_date": "2026-03-01"},
        {"start_date": "2026-03-01T12:00:00Z", "end_date": "2026-03-01T11:59:59Z"},
    ],
)
def test_bad_dates_are_422(world, params):
    for path in ("/tenant/stats", f"/engines/{world.e1}/stats", f"/consumers/{world.c1}/stats"):
        r = world.a.get(path, params=params)
        assert r.status_code == 422, (path, params, r.text)
        detail = r.json()["detail"]
        assert isinstance(detail, list) and detail[0]["loc"][0] == "query"


def test_stats_need_a_logged_in_user(world, client):
    for path in ("/tenant/stats", f"/engines/{world.e1}/stats", f"/consumers/{world.c1}/stats"):
        assert client.get(path).status_code == 401


def test_openapi_says_how_jobs_count(app):
    spec = app.openapi()
    for path in ("/tenant/stats", "/engines/{engine_id}/stats", "/consumers/{consumer_id}/stats"):
        operation = spec["paths"][path]["get"]
        assert "pending or processing jobs count in total_calls only" in operation["description"]
        assert {p["name"] for p in operation["parameters"]} >= {"start_date", "end_date"}
        assert {"401", "422"} <= set(operation["responses"])
    assert "test key" in spec["paths"]["/tenant/stats"]["get"]["description"]
    rate = spec["components"]["schemas"]["TenantSummaryStats"]["properties"]["success_rate"]["description"]
    assert "percentage 0..100" in rate


# --- percentiles: the database's, exactly ------------------------------------------------------


def percentile_cont(values: list[int], p: float) -> float:
    """The textbook linear interpolation, in PostgreSQL's order of floating-point steps."""
    ordered = sorted(values)
    position = p * (len(ordered) - 1)
    lo = math.floor(position)
    hi = math.ceil(position)
    return ordered[lo] + (position - lo) * (ordered[hi] - ordered[lo])


@pytest.mark.parametrize("n", [1, 2, 3, 7, 100, 1001])
def test_percentiles_match_linear_interpolation_exactly(local_aws, n):
    # GIVEN n scattered times with ties, plus failed jobs that recorded no time
    seed, times = 12345 + n, []
    for _ in range(n):
        seed = (seed * 1103515245 + 12345) % 2**31
        times.append(seed % 997)
    tenant = create_tenant()
    with session_scope() as s:
        tid = uuid.UUID(tenant["tenant_id"])
        engine, version, consumer = Ref(uuid.uuid4(), "E", "e"), Ref(uuid.uuid4(), "1"), Ref(uuid.uuid4(), "C")
        for i, ms in enumerate(times):
            add_job(s, tid, created=f"2026-01-01T00:00:{i % 60:02d}", engine=engine, version=version, consumer=consumer, status="completed", ms=ms)
        for _ in range(3):
            add_job(s, tid, created="2026-01-01T00:00:00", engine=engine, version=version, consumer=consumer, status="failed")
    # WHEN the database computes the percentiles
    with session_scope() as s:
        scope = Scope(tenant_id=tid)
        got = percentiles(s, scope=scope)
        totals = add_up(by_day(s, scope=scope))
        native = None
        if s.get_bind().dialect.name == "postgresql":
            native = s.execute(
                select(func.percentile_cont(literal_column("ARRAY[0.5,0.95,0.99]::float8[]")).within_group(Job.execution_time_ms))
                .where(Job.tenant_id == tid)
            ).scalar_one()
    # THEN they are the interpolated values, to the last bit, and PostgreSQL's own agrees
    assert got == tuple(percentile_cont(times, p) for p in (0.5, 0.95, 0.99))
    if native is not None:
        assert got == tuple(native)
    assert (totals.total, totals.successful, totals.failed, totals.time_count, totals.time_sum) == (n + 3, n, 3, n, sum(times))
