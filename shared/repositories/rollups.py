"""The daily rollups of jobs (``shared.db.models``, ``Job*Daily``): kept in the job's own transaction.

A job adds to the rollups of its creation day (UTC) twice at most:

- when it is inserted (``record_created``, called by ``shared.repositories.jobs.add``, the one
  way jobs are inserted): total_calls, plus whatever its status and execution time already say;
- when it finishes (``record_finished``, called by the conditional updates of
  ``shared.repositories.jobs`` only when they changed the row): completed or failed, and the
  execution time. Pending and processing count in total_calls only, so claiming a job and
  handing it back change nothing here; and execution_time_ms is only ever written by the update
  that finishes a job, so adding the finished job's time counts it exactly once.

Each addition is an upsert (``INSERT ... ON CONFLICT DO UPDATE SET x = x + excluded.x``) on
SQLite and PostgreSQL. The names a row carries are those of its latest job.
"""

from __future__ import annotations

from datetime import timezone
from typing import Protocol

from sqlalchemy import Connection, Table, case
from sqlalchemy.dialects import postgresql, sqlite

from shared.db.models import (
    Job,
    JobConsumerEngineStatsDaily,
    JobConsumerStatsDaily,
    JobEngineTimeHistogramDaily,
    JobStatsDaily,
    JobStatus,
    JobTimeHistogramDaily,
)

DAILY: Table = JobStatsDaily.__table__
CONSUMER_DAILY: Table = JobConsumerStatsDaily.__table__
CONSUMER_ENGINE_DAILY: Table = JobConsumerEngineStatsDaily.__table__
HISTOGRAM: Table = JobTimeHistogramDaily.__table__
ENGINE_HISTOGRAM: Table = JobEngineTimeHistogramDaily.__table__

# What the rollups need to know of a job (the conditional updates return these columns).
JOB_COLUMNS = (
    Job.tenant_id, Job.created_at, Job.engine_id, Job.engine_name, Job.engine_slug, Job.version_id, Job.version,
    Job.consumer_id, Job.consumer_name, Job.is_test, Job.status, Job.execution_time_ms,
)


class JobFacts(Protocol):
    tenant_id: object
    created_at: object
    engine_id: object
    engine_name: str
    engine_slug: str
    version_id: object
    version: str
    consumer_id: object
    consumer_name: str | None
    is_test: bool
    status: JobStatus
    execution_time_ms: int | None


def _insert(connection: Connection):
    return sqlite.insert if connection.dialect.name == "sqlite" else postgresql.insert


def _upsert(connection: Connection, table: Table, values: dict, *, add: tuple[str, ...], latest: tuple[str, ...] = ()) -> None:
    """Insert the row, or add ``add`` to the existing one and take ``latest`` if this job is newer."""
    statement = _insert(connection)(table).values(**values)
    new = statement.excluded
    changes = {c: table.c[c] + new[c] for c in add}
    if latest:
        newer = new.last_created_at >= table.c.last_created_at
        changes.update({c: case((newer, new[c]), else_=table.c[c]) for c in (*latest, "last_created_at")})
    keys = [c.name for c in table.primary_key.columns]
    connection.execute(statement.on_conflict_do_update(index_elements=keys, set_=changes))


COUNTS = ("total_calls", "completed_calls", "failed_calls", "timed_calls", "time_sum_ms")


def _add(connection: Connection, job: JobFacts, *, created: bool) -> None:
    created_at = job.created_at.astimezone(timezone.utc)
    time_ms = job.execution_time_ms
    counts = dict(
        total_calls=int(created),
        completed_calls=int(job.status == JobStatus.COMPLETED),
        failed_calls=int(job.status == JobStatus.FAILED),
        timed_calls=int(time_ms is not None),
        time_sum_ms=time_ms or 0,
    )
    if not any(counts.values()):
        return
    base = dict(tenant_id=job.tenant_id, day=created_at.date(), **counts, last_created_at=created_at)
    engine = dict(engine_id=job.engine_id, engine_name=job.engine_name, engine_slug=job.engine_slug)
    # Always in this order of tables, so concurrent jobs lock rollup rows in one order: no deadlock.
    _upsert(
        connection, DAILY, {**base, **engine, "version_id": job.version_id, "version": job.version, "is_test": job.is_test},
        add=COUNTS, latest=("engine_name", "engine_slug", "version"),
    )
    if job.consumer_id is not None:
        consumer = dict(consumer_id=job.consumer_id, consumer_name=job.consumer_name)
        _upsert(connection, CONSUMER_DAILY, {**base, **consumer}, add=COUNTS, latest=("consumer_name",))
        _upsert(
            connection, CONSUMER_ENGINE_DAILY, {**base, **consumer, **engine},
            add=COUNTS, latest=("consumer_name", "engine_name", "engine_slug"),
        )
    if time_ms is not None:
        bucket = dict(tenant_id=job.tenant_id, day=created_at.date(), execution_time_ms=time_ms, count=1)
        _upsert(connection, HISTOGRAM, bucket, add=("count",))
        _upsert(connection, ENGINE_HISTOGRAM, {**bucket, "engine_id": job.engine_id}, add=("count",))


def record_finished(connection: Connection, job: JobFacts) -> None:
    """Count a job that has just become completed or failed (it was pending or processing)."""
    _add(connection, job, created=False)


def record_created(connection: Connection, job: JobFacts) -> None:
    """Count a job that has just been inserted (call it on the insert's connection, after the flush)."""
    _add(connection, job, created=True)
