"""Migration 0004 fills the rollups from the jobs already there, on a scratch database of this run's kind."""

from __future__ import annotations

import os
import urllib.parse
import uuid
from datetime import datetime, timedelta, timezone

import pg8000.native
import pytest
from sqlalchemy import insert

from shared.db.migrate import upgrade
from shared.db.models import Job, Tenant
from shared.db.session import get_engine, new_session
from shared.repositories import jobs as job_repo
from tests.stats.rollups_check import actual, expected


def _pg_admin(url: str, statement: str) -> None:
    u = urllib.parse.urlparse(url.replace("postgresql+pg8000://", "postgresql://"))
    con = pg8000.native.Connection(
        user=u.username or "postgres", password=u.password, host=u.hostname, port=u.port or 5432, database=u.path.lstrip("/"),
    )
    try:
        con.run(statement)
    finally:
        con.close()


@pytest.fixture()
def scratch_url(tmp_path, local_aws):
    """An empty database beside this run's: a SQLite file, or a new PostgreSQL database."""
    run_url = os.environ["DATABASE_URL"]
    if run_url.startswith("sqlite"):
        url = f"sqlite:///{tmp_path / 'backfill.db'}"
        yield url
        get_engine(url).dispose()
        return
    name = f"sc_backfill_{uuid.uuid4().hex[:8]}"
    _pg_admin(run_url, f'CREATE DATABASE "{name}"')
    url = run_url.rsplit("/", 1)[0] + "/" + name
    try:
        yield url
    finally:
        get_engine(url).dispose()
        _pg_admin(run_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_migration_backfills_rollups_from_existing_jobs(scratch_url):
    # GIVEN a database at 0003 with jobs of two tenants: renamed engines, test-key jobs, every status
    upgrade(scratch_url, "0003")
    tenants = [uuid.uuid4(), uuid.uuid4()]
    engine, version, consumers = uuid.uuid4(), uuid.uuid4(), [uuid.uuid4(), uuid.uuid4()]
    start = datetime(2026, 3, 1, 22, tzinfo=timezone.utc)
    rows = []
    for i in range(60):
        status = ("completed", "completed", "failed", "pending", "processing", "completed")[i % 6]
        consumer = None if i % 7 == 0 else consumers[i % 2]
        rows.append(dict(
            id=uuid.uuid4(), tenant_id=tenants[i % 2], engine_id=engine, engine_name=f"Engine as of {i}", engine_slug=f"e-{i}",
            version_id=version, version="1.0", consumer_id=consumer, consumer_name=consumer and f"Consumer as of {i}",
            is_test=consumer is None, status=status, inputs={}, execution_time_ms=(i * 13) % 40 if status == "completed" else None,
            created_at=start + timedelta(minutes=17 * i), updated_at=start,
        ))
    with get_engine(scratch_url).begin() as connection:  # Core inserts, not jobs.add: the rollups are not touched
        connection.execute(insert(Tenant.__table__), [dict(id=t, slug=f"t-{t.hex[:8]}", name="t") for t in tenants])
        connection.execute(insert(Job.__table__), rows)
    # WHEN the migration runs
    upgrade(scratch_url, "head")
    # THEN each tenant's rollups hold what its jobs add up to
    session = new_session(scratch_url)
    try:
        for tenant_id in tenants:
            want = expected(session, tenant_id)
            assert actual(session, tenant_id) == want
            assert sum(r["total_calls"] for r in want["job_stats_daily"].values()) == 30
        # AND the job life cycle carries on from there
        pending = next(r for r in rows if r["status"] == "pending")
        assert job_repo.fail_unfinished(session, job_id=pending["id"], message="gone")
        session.commit()
        assert actual(session, pending["tenant_id"]) == expected(session, pending["tenant_id"])
    finally:
        session.close()
