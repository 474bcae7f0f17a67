"""Rollups folded for many jobs at once hold exactly what one job at a time would have written.

The same hand-built jobs go to two tenants: one counted job by job (``record_created`` /
``record_finished``, the single-job path), the other folded (``record_created_many``, then
finished as the worker finishes a batch: ``claim_many`` and ``finish_many``). Both must end with the same rollup rows, and each with exactly
what its jobs add up to (``rollups_check``). The jobs are listed out of creation order, share
rollup rows, tie on their creation time (with the same names, as the reference in
``rollups_check`` cannot order a tie) and rename their engine and consumer on the way, so the
sums and the "names of the latest job" rule are both exercised.
"""

from __future__ import annotations

import re
import uuid

from shared.db.models import Job, JobStatus
from shared.db.session import session_scope
from shared.repositories import jobs as job_repo
from shared.repositories import rollups
from tests.factories import create_tenant
from tests.stats.rollups_check import actual, assert_rollups_exact
from tests.stats.test_stats import Ref, at

ENGINE, VERSION, OTHER_VERSION = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
SHOP, BATCH = uuid.uuid4(), uuid.uuid4()

# (created, engine name, version, consumer (None: test key), consumer name, outcome, ms)
JOBS = [
    ("2026-06-02T10:00:00", "Quote B", VERSION, SHOP, "Shop 2", "completed", 12),
    ("2026-06-01T09:00:00", "Quote A", VERSION, SHOP, "Shop 1", "completed", 12),
    ("2026-06-02T10:00:00", "Quote B", VERSION, SHOP, "Shop 2", "failed", None),  # ties with the first
    ("2026-06-02T08:00:00", "Quote Z", OTHER_VERSION, BATCH, "Batch", "completed", 30),
    ("2026-06-01T23:59:59.999999", "Quote A", VERSION, None, None, "completed", 12),
    ("2026-06-02T00:00:00", "Quote B", VERSION, None, None, "failed", 5),
    ("2026-06-02T11:00:00", "Quote D", OTHER_VERSION, SHOP, "Shop 4", "pending", None),  # never finishes
    ("2026-06-01T08:00:00", "Quote 0", VERSION, SHOP, "Shop 0", "completed", 7),  # listed last, created earlier
]


def new_jobs(tenant_id: uuid.UUID) -> list[Job]:
    jobs = []
    for created, engine_name, version_id, consumer_id, consumer_name, _, _ in JOBS:
        engine, version = Ref(ENGINE, engine_name, engine_name.lower().replace(" ", "-")), Ref(version_id, "1.0")
        jobs.append(Job(
            tenant_id=tenant_id, engine_id=engine.id, engine_name=engine.name, engine_slug=engine.slug,
            version_id=version.id, version=version.name, consumer_id=consumer_id, consumer_name=consumer_name,
            is_test=consumer_id is None, status=JobStatus.PENDING, inputs={}, created_at=at(created), updated_at=at(created),
        ))
    return jobs


def outcome(index: int) -> dict | None:
    _, _, _, _, _, status, ms = JOBS[index]
    return None if status == "pending" else dict(status=status, execution_time_ms=ms)


def one_by_one() -> uuid.UUID:
    tenant_id = uuid.UUID(create_tenant()["tenant_id"])
    with session_scope() as s:
        jobs = [job_repo.add(s, job) for job in new_jobs(tenant_id)]
    with session_scope() as s:
        for i, job in enumerate(jobs):
            if outcome(i):
                claimed_at = job_repo.claim_for_processing(s, job_id=job.id, lease_seconds=300)
                assert job_repo.finish(s, job_id=job.id, claimed_at=claimed_at, **outcome(i))
    return tenant_id


def folded() -> uuid.UUID:
    tenant_id = uuid.UUID(create_tenant()["tenant_id"])
    with session_scope() as s:
        jobs = new_jobs(tenant_id)
        s.add_all(jobs)
        s.flush()
        rollups.record_created_many(s.connection(), jobs)
    with session_scope() as s:
        # finished as the worker finishes a batch: one claim for all, one folded finish
        claimed_at, claimed = job_repo.claim_many(s, job_ids=[job.id for job in jobs], lease_seconds=300)
        assert len(claimed) == len(jobs)
        outcomes = [(job.id, outcome(i)) for i, job in enumerate(jobs) if outcome(i)]
        assert job_repo.finish_many(s, claimed_at=claimed_at, outcomes=outcomes) == {job_id for job_id, _ in outcomes}
        # the jobs left unfinished go back to pending, as a hand-back does
        for job in jobs:
            job_repo.release_claim(s, job_id=job.id, claimed_at=claimed_at)
    return tenant_id


def test_folded_rollups_equal_job_by_job(app, local_aws):
    a, b = one_by_one(), folded()
    rows_a, rows_b = assert_rollups_exact(a), assert_rollups_exact(b)
    assert rows_a == rows_b
    # the names are those of the latest job created, not of the job listed last
    june_1 = rows_b["job_consumer_stats_daily"][(at("2026-06-01T00:00:00").date(), SHOP)]
    assert (june_1["consumer_name"], june_1["total_calls"], june_1["time_sum_ms"]) == ("Shop 1", 2, 19)
    june_2 = rows_b["job_consumer_stats_daily"][(at("2026-06-02T00:00:00").date(), SHOP)]
    assert (june_2["consumer_name"], june_2["total_calls"], june_2["failed_calls"]) == ("Shop 4", 3, 1)


def rows_per_table(params: dict) -> list[int]:
    """The rows each table's upsert in one statement binds: ``<column>_<row>``, and in a combined
    statement (PostgreSQL) ``w<table's place>_<column>_<row>``."""
    rows: dict[str, set[str]] = {}
    for name in params:
        place = re.match(r"w(\d+)_", name)
        rows.setdefault(place.group(1) if place else "", set()).add(name.rsplit("_", 1)[1])
    return [len(rows[place]) for place in sorted(rows, key=lambda p: int(p or 0))]


def test_folding_writes_one_upsert_per_rollup_row(app, local_aws, monkeypatch):
    # GIVEN the eight jobs just inserted (no outcome yet: only the three call-count tables move)
    tenant_id = uuid.UUID(create_tenant()["tenant_id"])
    statements = []
    with session_scope() as s:
        jobs = new_jobs(tenant_id)
        s.add_all(jobs)
        s.flush()
        connection = s.connection()
        # WHEN they are counted folded (the statements captured, not run)
        monkeypatch.setattr(connection, "execute", lambda statement, params: statements.append(rows_per_table(params)))
        rollups.record_created_many(connection, jobs)
        on_postgres = connection.dialect.name == "postgresql"
        monkeypatch.undo()
        s.rollback()
    # THEN each table gets one upsert, with one row per distinct rollup row; on PostgreSQL the three
    # are one statement (one round trip), elsewhere a statement each
    assert len(statements) == (1 if on_postgres else 3)
    assert [rows for statement in statements for rows in statement] == [
        len({(at(c).date(), v, who is None) for c, _, v, who, *_ in JOBS}),  # job_stats_daily: 5
        len({(at(c).date(), who) for c, _, _, who, *_ in JOBS if who}),  # consumers: 3
        len({(at(c).date(), who) for c, _, _, who, *_ in JOBS if who}),  # consumers by engine: 3
    ] == [5, 3, 3]


def test_rollups_split_into_small_statements_still_add_up(app, local_aws, monkeypatch):
    # GIVEN statements that take two rows per table and, combined (PostgreSQL), few binds: the
    # eight jobs' rollups need several of each
    monkeypatch.setattr(rollups, "CHUNK", 2)
    monkeypatch.setattr(rollups, "COMBINED_BINDS", 40)
    # WHEN they are counted folded THEN the rows are exactly what the jobs add up to, as job by job
    assert assert_rollups_exact(folded()) == assert_rollups_exact(one_by_one())
