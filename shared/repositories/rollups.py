"""The daily rollups of jobs (``shared.db.models``, ``Job*Daily``): kept in the job's own transaction.

A job adds to the rollups of its creation day (UTC) twice at most:

- when it is inserted (``record_created``, called by ``shared.repositories.jobs.add``; execute's
  ``jobs.insert_new`` by ``insert_and_record_created``, which on PostgreSQL puts the job's INSERT
  in the same statement; batches' jobs by ``record_created_many``): total_calls, plus whatever
  its status and execution time already say;
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
statement is a round trip). On PostgreSQL the tables' upserts go in one statement, each a
data-modifying ``WITH`` query (``_combined``): one round trip for all the rollups of a job or a
batch instead of three to five. Rows are written table by table in a fixed order, and within a
table in key order (a statement takes its rows' locks in VALUES order), so concurrent
transactions lock rollup rows in one order: no deadlock. In the combined statement the order is
kept by the main query: it counts the rows of each ``WITH`` query in turn, and PostgreSQL runs a
data-modifying ``WITH`` query to completion when it is first read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timezone
from typing import Protocol

from sqlalchemy import Connection, Executable, Table, TextClause, bindparam, insert, text

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

    def upsert_sql(self, rows: int = 1, prefix: str = "") -> str:
        """Insert ``rows`` rows (distinct keys; binds ``<prefix><column>_<i>``), or add ``add`` to an
        existing one and take ``latest`` if this row's job is newer."""
        name, columns = self.table.name, self.columns
        changes = [f"{c} = {name}.{c} + excluded.{c}" for c in self.add]
        changes += [
            f"{c} = CASE WHEN excluded.last_created_at >= {name}.last_created_at THEN excluded.{c} ELSE {name}.{c} END"
            for c in (*self.latest, "last_created_at") if self.latest
        ]
        tuples = ", ".join("(" + ", ".join(f":{prefix}{c}_{i}" for c in columns) + ")" for i in range(rows))
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

_statements: dict[tuple, Executable] = {}
# Rows per statement at most (a batch's histogram can touch hundreds): binds stay far below the
# databases' limits (PostgreSQL 65,535; SQLite 32,766) and the statements cached stay few.
CHUNK = 100
# Binds per combined statement at most (PostgreSQL): a batch touching more rows takes several.
COMBINED_BINDS = 20_000
# Statement texts kept at most; beyond, the cache starts again (shapes repeat: rows per table).
_CACHED_STATEMENTS = 512

Piece = tuple[_Rollup, list[dict]]  # one table's rows (at most CHUNK) for one upsert


def _cached(cache_key: tuple, build) -> Executable:
    statement = _statements.get(cache_key)
    if statement is None:
        if len(_statements) >= _CACHED_STATEMENTS:
            _statements.clear()
        statement = _statements[cache_key] = build()
    return statement


def _binds(rollup: _Rollup, rows: int, prefix: str = "") -> list:
    return [bindparam(f"{prefix}{c}_{i}", type_=rollup.table.c[c].type) for i in range(rows) for c in rollup.columns]


def _statement(connection: Connection, rollup: _Rollup, rows: int) -> TextClause:
    """The rollup's upsert of ``rows`` rows for this connection's dialect, built once (typed binds: UUIDs, dates, times)."""
    return _cached(
        (connection.dialect.name, rollup.table.name, rows), lambda: text(rollup.upsert_sql(rows)).bindparams(*_binds(rollup, rows))
    )


# A row inserted ahead of the upserts in the same statement: its table and columns (binds ``r_<column>``).
Lead = tuple[Table, tuple[str, ...]]


def _combined(shape: tuple[tuple[_Rollup, int], ...], lead: Lead | None = None) -> TextClause:
    """PostgreSQL: the upserts of ``shape`` (tables and rows, in order) as one statement, run in
    that order (binds ``w<k>_<column>_<i>``), after the ``lead`` row's INSERT when there is one."""
    def build() -> TextClause:
        queries = [f"w{k} AS ({rollup.upsert_sql(rows, f'w{k}_')} RETURNING 1)" for k, (rollup, rows) in enumerate(shape)]
        names = [f"w{k}" for k in range(len(shape))]
        binds = [bind for k, (rollup, rows) in enumerate(shape) for bind in _binds(rollup, rows, f"w{k}_")]
        if lead is not None:
            table, columns = lead
            values = ", ".join(f":r_{c}" for c in columns)
            queries.insert(0, f"r AS (INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({values}) RETURNING 1)")
            names.insert(0, "r")
            binds += [bindparam(f"r_{c}", type_=table.c[c].type) for c in columns]
        counts = ", ".join(f"(SELECT count(*) FROM {name})" for name in names)
        return text(f"WITH {', '.join(queries)} SELECT {counts}").bindparams(*binds)

    key = ("postgresql", "combined", tuple((rollup.table.name, rows) for rollup, rows in shape))
    return _cached(key if lead is None else (*key, lead[0].name, lead[1]), build)


def _params(rollup: _Rollup, rows: list[dict], prefix: str = "") -> dict:
    return {f"{prefix}{c}_{i}": row[c] for i, row in enumerate(rows) for c in rollup.columns}


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


def _pieces(jobs: Iterable[JobFacts], *, created: bool) -> list[Piece]:
    """The rows to write, table by table in the fixed order, each table's in key order, in chunks."""
    pieces: list[Piece] = []
    for rollup, rows in _fold(jobs, created=created).items():
        ordered = [rows[key] for key in sorted(rows)]
        pieces += [(rollup, ordered[start:start + CHUNK]) for start in range(0, len(ordered), CHUNK)]
    return pieces


def _write(connection: Connection, jobs: Iterable[JobFacts], *, created: bool, lead: tuple[Table, dict] | None = None) -> None:
    """The jobs' rollups: on PostgreSQL in one statement (one round trip; more only past
    ``COMBINED_BINDS``), after ``lead``'s row inserted into its table in that same statement;
    elsewhere that INSERT, then one multi-row upsert per table (per ``CHUNK`` rows)."""
    pieces = _pieces(jobs, created=created)
    if connection.dialect.name != "postgresql":
        if lead is not None:
            connection.execute(_cached(("insert", lead[0].name), lambda: insert(lead[0])), lead[1])
        for rollup, rows in pieces:
            connection.execute(_statement(connection, rollup, len(rows)), _params(rollup, rows))
        return

    def binds(piece: Piece) -> int:
        return len(piece[1]) * len(piece[0].columns)

    while pieces or lead is not None:
        group = [pieces.pop(0)] if pieces else []
        while pieces and sum(map(binds, group)) + binds(pieces[0]) <= COMBINED_BINDS:
            group.append(pieces.pop(0))
        params = {name: value for k, (rollup, rows) in enumerate(group) for name, value in _params(rollup, rows, f"w{k}_").items()}
        head = None
        if lead is not None:
            table, row = lead
            head, lead = (table, tuple(row)), None
            params.update({f"r_{c}": value for c, value in row.items()})
        connection.execute(_combined(tuple((rollup, len(rows)) for rollup, rows in group), head), params)


def record_finished(connection: Connection, job: JobFacts) -> None:
    """Count a job that has just become completed or failed (it was pending or processing)."""
    _write(connection, [job], created=False)


def record_created(connection: Connection, job: JobFacts) -> None:
    """Count a job that has just been inserted (call it on the insert's connection, after the flush)."""
    _write(connection, [job], created=True)


def insert_and_record_created(connection: Connection, table: Table, row: dict, job: JobFacts) -> None:
    """Insert ``row`` (every column it is to have, Python-side defaults included) into ``table``
    and count ``job``, the job it makes, as created: on PostgreSQL in one statement, the INSERT a
    data-modifying ``WITH`` query run before the upserts (one round trip for execute's writes)."""
    _write(connection, [job], created=True, lead=(table, row))


def record_finished_many(connection: Connection, jobs: Iterable[JobFacts]) -> None:
    """Count jobs that have just become completed or failed, folded: one upsert per rollup row they touch."""
    _write(connection, jobs, created=False)


def record_created_many(connection: Connection, jobs: Iterable[JobFacts]) -> None:
    """Count jobs that have just been inserted (after their flush), folded: one upsert per rollup row they touch."""
    _write(connection, jobs, created=True)
