"""The daily rollups of jobs (``shared.db.models``, ``Job*Daily``): kept in the job's own transaction.

A job adds to the rollups of its creation day (UTC) twice at most:

- when it is inserted (``record_created``, called by ``shared.repositories.jobs.add`` and
  ``insert_new``; batches' jobs by ``record_created_many``): total_calls, plus whatever its
  status and execution time already say;
- when it finishes (``record_finished``, called by the conditional updates of
  ``shared.repositories.jobs`` only when they changed the row): completed or failed, and the
  execution time. Pending and processing count in total_calls only, so claiming a job and
  handing it back change nothing here; and execution_time_ms is only ever written by the update
  that finishes a job, so adding the finished job's time counts it exactly once.

Each addition is an upsert (``INSERT ... ON CONFLICT DO UPDATE SET x = x + excluded.x``) on
SQLite and PostgreSQL. The names a row carries are those of its latest job.

The upserts are ``text()`` statements built once per table and dialect (not a new SQLAlchemy
construct per job), and many jobs are folded before they are written
(``record_created_many`` / ``record_finished_many``): their counts are summed per rollup row in
Python, and each table's distinct rows are written by one multi-row upsert (``VALUES (...),
(...) ON CONFLICT ...``; the keys are distinct, as one statement requires), so a batch of jobs
costs one statement per table it touches rather than up to five per job (on PostgreSQL each
statement is a round trip). Rows are written table by table in a fixed
order, and within a table in key order (a statement takes its rows' locks in VALUES order), so
concurrent transactions lock rollup rows in one order: no deadlock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timezone
from typing import Protocol

from sqlalchemy import Connection, Table, TextClause, bindparam, text

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


COUNTS = ("total_calls", "completed_calls", "failed_calls", "timed_calls", "time_sum_ms")


@dataclass(frozen=True)
class _Rollup:
    """One rollup table: its key (the primary key), the counts added up, the names taken from the latest job."""

    table: Table
    add: tuple[str, ...]
    latest: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.table.primary_key.columns)

    @property
    def columns(self) -> tuple[str, ...]:
        return (*self.key, *self.add, *self.latest, *(("last_created_at",) if self.latest else ()))

    def upsert_sql(self, rows: int = 1) -> str:
        """Insert ``rows`` rows (distinct keys; binds ``<column>_<i>``), or add ``add`` to an existing one
        and take ``latest`` if this row's job is newer."""
        name, columns = self.table.name, self.columns
        changes = [f"{c} = {name}.{c} + excluded.{c}" for c in self.add]
        changes += [
            f"{c} = CASE WHEN excluded.last_created_at >= {name}.last_created_at THEN excluded.{c} ELSE {name}.{c} END"
            for c in (*self.latest, "last_created_at") if self.latest
        ]
        tuples = ", ".join("(" + ", ".join(f":{c}_{i}" for c in columns) + ")" for i in range(rows))
        return (
            f"INSERT INTO {name} ({', '.join(columns)}) VALUES {tuples} "
            f"ON CONFLICT ({', '.join(self.key)}) DO UPDATE SET {', '.join(changes)}"
        )


# Always in this order of tables (and within a table in key order): one lock order for everyone.
_DAILY = _Rollup(DAILY, COUNTS, ("engine_name", "engine_slug", "version"))
_CONSUMER_DAILY = _Rollup(CONSUMER_DAILY, COUNTS, ("consumer_name",))
_CONSUMER_ENGINE_DAILY = _Rollup(CONSUMER_ENGINE_DAILY, COUNTS, ("consumer_name", "engine_name", "engine_slug"))
_HISTOGRAM = _Rollup(HISTOGRAM, ("count",))
_ENGINE_HISTOGRAM = _Rollup(ENGINE_HISTOGRAM, ("count",))
ROLLUPS = (_DAILY, _CONSUMER_DAILY, _CONSUMER_ENGINE_DAILY, _HISTOGRAM, _ENGINE_HISTOGRAM)

_statements: dict[tuple[str, str, int], TextClause] = {}
# Rows per statement at most (a batch's histogram can touch hundreds): binds stay far below the
# databases' limits (PostgreSQL 65,535; SQLite 32,766) and the statements cached stay few.
CHUNK = 100


def _statement(connection: Connection, rollup: _Rollup, rows: int) -> TextClause:
    """The rollup's upsert of ``rows`` rows for this connection's dialect, built once (typed binds: UUIDs, dates, times)."""
    cache_key = (connection.dialect.name, rollup.table.name, rows)
    statement = _statements.get(cache_key)
    if statement is None:
        binds = [bindparam(f"{c}_{i}", type_=rollup.table.c[c].type) for i in range(rows) for c in rollup.columns]
        statement = _statements[cache_key] = text(rollup.upsert_sql(rows)).bindparams(*binds)
    return statement


def _rows(job: JobFacts, *, created: bool) -> list[tuple[_Rollup, dict]]:
    """The rollup rows one job adds to, with what it adds (nothing when it adds nothing)."""
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
        return []
    base = dict(tenant_id=job.tenant_id, day=created_at.date(), **counts, last_created_at=created_at)
    engine = dict(engine_id=job.engine_id, engine_name=job.engine_name, engine_slug=job.engine_slug)
    rows = [(_DAILY, {**base, **engine, "version_id": job.version_id, "version": job.version, "is_test": job.is_test})]
    if job.consumer_id is not None:
        consumer = dict(consumer_id=job.consumer_id, consumer_name=job.consumer_name)
        rows += [(_CONSUMER_DAILY, {**base, **consumer}), (_CONSUMER_ENGINE_DAILY, {**base, **consumer, **engine})]
    if time_ms is not None:
        bucket = dict(tenant_id=job.tenant_id, day=created_at.date(), execution_time_ms=time_ms, count=1)
        rows += [(_HISTOGRAM, bucket), (_ENGINE_HISTOGRAM, {**bucket, "engine_id": job.engine_id})]
    return rows


def _fold(jobs: Iterable[JobFacts], *, created: bool) -> dict[_Rollup, dict[tuple, dict]]:
    """The jobs' rows summed per rollup row: counts added, names of the latest job (the later one on a tie,
    as one upsert after another would leave them)."""
    folded: dict[_Rollup, dict[tuple, dict]] = {rollup: {} for rollup in ROLLUPS}
    for job in jobs:
        for rollup, row in _rows(job, created=created):
            key = tuple(str(row[c]) for c in rollup.key)
            total = folded[rollup].get(key)
            if total is None:
                folded[rollup][key] = row
                continue
            for c in rollup.add:
                total[c] += row[c]
            if rollup.latest and row["last_created_at"] >= total["last_created_at"]:
                total.update({c: row[c] for c in (*rollup.latest, "last_created_at")})
    return folded


def _write(connection: Connection, jobs: Iterable[JobFacts], *, created: bool) -> None:
    """One multi-row upsert per table (per ``CHUNK`` rows), rows in key order: one statement, one round trip."""
    for rollup, rows in _fold(jobs, created=created).items():
        ordered = [rows[key] for key in sorted(rows)]
        for start in range(0, len(ordered), CHUNK):
            chunk = ordered[start:start + CHUNK]
            params = {f"{c}_{i}": row[c] for i, row in enumerate(chunk) for c in rollup.columns}
            connection.execute(_statement(connection, rollup, len(chunk)), params)


def record_finished(connection: Connection, job: JobFacts) -> None:
    """Count a job that has just become completed or failed (it was pending or processing)."""
    _write(connection, [job], created=False)


def record_created(connection: Connection, job: JobFacts) -> None:
    """Count a job that has just been inserted (call it on the insert's connection, after the flush)."""
    _write(connection, [job], created=True)


def record_finished_many(connection: Connection, jobs: Iterable[JobFacts]) -> None:
    """Count jobs that have just become completed or failed, folded: one upsert per rollup row they touch."""
    _write(connection, jobs, created=False)


def record_created_many(connection: Connection, jobs: Iterable[JobFacts]) -> None:
    """Count jobs that have just been inserted (after their flush), folded: one upsert per rollup row they touch."""
    _write(connection, jobs, created=True)
