"""Usage statistics over jobs: SQL aggregation only, never one Python object per job.

Every query takes a ``Scope``: the tenant, the period's inclusive bounds (``None`` where
open), optionally one engine or one consumer. ``pieces`` cuts a period into the whole UTC days
inside it, read from the daily rollups (``shared.repositories.rollups``: a few hundred rows a
day instead of thousands of jobs), and the partial days at its edges, read from the jobs
themselves through the covering indexes of migration 0003. Each breakdown is one statement: a
``GROUP BY`` per piece, ``UNION ALL``, and a ``GROUP BY`` over those few rows.

Percentiles are exactly PostgreSQL's ``percentile_cont`` (linear interpolation between the
values at 0-based ranks floor(p*(n-1)) and the next), computed from a histogram of the recorded
times (the rollup histograms for whole days, ``GROUP BY execution_time_ms`` over the jobs of
partial days, added up, then running counts): the same SQL on SQLite and PostgreSQL, in the
same float8 steps.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import date, datetime, time, timedelta, timezone

from sqlalchemy import ColumnElement, Date, Float, Integer, Table, and_, case, cast, func, literal, literal_column, select, text, union_all
from sqlalchemy.orm import Session

from shared.db.models import Consumer, Engine, EngineVersion, Job, JobStatus
from shared.repositories import rollups

PERCENTILES = (0.5, 0.95, 0.99)


@dataclass(frozen=True)
class Scope:
    """Which jobs a statistic covers: one tenant, a period, optionally one engine or consumer."""

    tenant_id: uuid.UUID
    start: datetime | None = None
    end: datetime | None = None
    engine_id: uuid.UUID | None = None
    consumer_id: uuid.UUID | None = None

    def where(self) -> ColumnElement[bool]:
        clauses = [Job.tenant_id == self.tenant_id]
        if self.start is not None:
            clauses.append(Job.created_at >= self.start)
        if self.end is not None:
            clauses.append(Job.created_at <= self.end)
        if self.engine_id is not None:
            clauses.append(Job.engine_id == self.engine_id)
        if self.consumer_id is not None:
            clauses.append(Job.consumer_id == self.consumer_id)
        return and_(*clauses)


@dataclass(frozen=True)
class Days:
    """Whole UTC days of a scope, first to last inclusive (``None`` where open): read from rollups."""

    first: date | None
    last: date | None


_TICK = timedelta(microseconds=1)  # timestamps are stored to the microsecond


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=timezone.utc)


def pieces(scope: Scope) -> list[Scope | Days]:
    """The scope's period in chronological pieces: raw jobs of a partial first day, whole days, raw jobs of a partial last day."""
    start, end = _utc(scope.start), _utc(scope.end)
    if (start is not None and start.time() != time.min and start.date() == date.max) or (
        end is not None and end.time() != time.max and end.date() == date.min
    ):
        return [scope]  # part of the calendar's first or last day: no whole day inside, none after or before
    first = None if start is None else start.date() if start.time() == time.min else start.date() + timedelta(days=1)
    last = None if end is None else end.date() if end.time() == time.max else end.date() - timedelta(days=1)
    if first is not None and last is not None and first > last:
        return [scope]  # no whole day inside
    parts: list[Scope | Days] = []
    if start is not None and start.time() != time.min:
        parts.append(replace(scope, start=start, end=_midnight(first) - _TICK))
    parts.append(Days(first, last))
    if end is not None and end.time() != time.max:
        parts.append(replace(scope, start=_midnight(last + timedelta(days=1)), end=end))
    return parts


def _count_table(scope: Scope, key: str) -> Table:
    """The rollup that answers a breakdown by ``key`` over the scope, with the fewest rows."""
    # The consumer rollups hold consumers' jobs only, so they answer only where consumers are asked about.
    if scope.consumer_id is not None:
        return rollups.CONSUMER_DAILY if key == "day" else rollups.CONSUMER_ENGINE_DAILY
    if key == "consumer_id":
        return rollups.CONSUMER_ENGINE_DAILY if scope.engine_id is not None else rollups.CONSUMER_DAILY
    return rollups.DAILY


def _rollup_where(table: Table, scope: Scope, days: Days) -> list[ColumnElement[bool]]:
    clauses = [table.c.tenant_id == scope.tenant_id]
    if days.first is not None:
        clauses.append(table.c.day >= days.first)
    if days.last is not None:
        clauses.append(table.c.day <= days.last)
    if scope.engine_id is not None:
        clauses.append(table.c.engine_id == scope.engine_id)
    if scope.consumer_id is not None:
        clauses.append(table.c.consumer_id == scope.consumer_id)
    return clauses


@dataclass(frozen=True)
class Counts:
    """The aggregates every breakdown carries."""

    total: int
    successful: int
    failed: int
    test_calls: int
    time_sum: int | None
    time_count: int


def _aggregates() -> list:
    return [
        func.count().label("total"),
        func.count().filter(Job.status == JobStatus.COMPLETED).label("successful"),
        func.count().filter(Job.status == JobStatus.FAILED).label("failed"),
        func.count().filter(Job.is_test.is_(True)).label("test_calls"),
        func.sum(Job.execution_time_ms).label("time_sum"),
        func.count(Job.execution_time_ms).label("time_count"),
    ]


def _rollup_aggregates(table: Table) -> list:
    test_calls = func.sum(case((table.c.is_test, table.c.total_calls), else_=0)) if "is_test" in table.c else literal(0)
    return [
        func.sum(table.c.total_calls).label("total"),
        func.sum(table.c.completed_calls).label("successful"),
        func.sum(table.c.failed_calls).label("failed"),
        test_calls.label("test_calls"),
        func.sum(table.c.time_sum_ms).label("time_sum"),
        func.sum(table.c.timed_calls).label("time_count"),
    ]


def _counts(row) -> dict:
    time_count = int(row.time_count or 0)
    return dict(
        total=int(row.total), successful=int(row.successful), failed=int(row.failed), test_calls=int(row.test_calls),
        time_sum=int(row.time_sum) if time_count else None, time_count=time_count,
    )


def add_up(rows: list[Counts]) -> Counts:
    """The counts of several breakdown rows together (a summary from its days)."""
    sums = [r.time_sum for r in rows if r.time_sum is not None]
    return Counts(
        total=sum(r.total for r in rows), successful=sum(r.successful for r in rows), failed=sum(r.failed for r in rows),
        test_calls=sum(r.test_calls for r in rows), time_sum=sum(sums) if sums else None,
        time_count=sum(r.time_count for r in rows),
    )


def prepare(session: Session) -> None:
    """Tune this transaction for aggregation on PostgreSQL.

    JIT compilation costs ~150 ms per query at a million rows and saves less than that here;
    with the default random_page_cost (4, for spinning disks) the planner prefers scanning the
    wide job rows to the index-only scan of a covering index that is faster by half.
    """
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SET LOCAL jit = off"))
        session.execute(text("SET LOCAL random_page_cost = 1.1"))


def _breakdown(session: Session, scope: Scope, key: str, *raw_where: ColumnElement[bool]):
    """Rows of (k, counts) grouped by ``key`` (a job column, or "day"), rollups and raw edges added up."""
    table = _count_table(scope, key)
    parts = []
    for piece in pieces(scope):
        if isinstance(piece, Days):
            column = table.c[key]
            parts.append(select(column.label("k"), *_rollup_aggregates(table)).where(*_rollup_where(table, scope, piece)).group_by(column))
        else:
            column = _day_column(session) if key == "day" else getattr(Job, key)
            parts.append(select(column.label("k"), *_aggregates()).where(piece.where(), *raw_where).group_by(column))
    every = union_all(*parts).subquery() if len(parts) > 1 else parts[0].subquery()
    sums = [func.sum(every.c[c]).label(c) for c in ("total", "successful", "failed", "test_calls", "time_sum", "time_count")]
    return session.execute(select(every.c.k, *sums).group_by(every.c.k).order_by(every.c.k))


def _histogram(session: Session, scope: Scope):
    """(v, c): how many jobs of the scope recorded each execution time v."""
    # No consumer histogram: consumer statistics have no percentiles, so a consumer scope reads jobs.
    table = None if scope.consumer_id else rollups.ENGINE_HISTOGRAM if scope.engine_id else rollups.HISTOGRAM
    parts = []
    for piece in pieces(scope) if table is not None else [scope]:
        if isinstance(piece, Days):
            parts.append(select(table.c.execution_time_ms.label("v"), table.c["count"].label("c")).where(*_rollup_where(table, scope, piece)))
        else:
            parts.append(
                select(Job.execution_time_ms.label("v"), func.count().label("c"))
                .where(piece.where(), Job.execution_time_ms.is_not(None))
                .group_by(Job.execution_time_ms)
            )
    every = union_all(*parts).subquery() if len(parts) > 1 else parts[0].subquery()
    return select(every.c.v, func.sum(every.c.c).label("c")).group_by(every.c.v).subquery()


def percentiles(session: Session, *, scope: Scope) -> tuple[float | None, ...]:
    """The 50th, 95th and 99th percentile of execution_time_ms over the scope, as percentile_cont."""
    histogram = _histogram(session, scope)
    # Each distinct value v occupies the 0-based ranks [below, below + c).
    ranked = select(
        histogram.c.v,
        (func.sum(histogram.c.c).over(order_by=histogram.c.v) - histogram.c.c).label("below"),
        func.sum(histogram.c.c).over(order_by=histogram.c.v).label("upto"),
        func.sum(histogram.c.c).over().label("n"),
    ).subquery()
    floor = _floor(session)
    columns = []
    for p in PERCENTILES:
        position = cast(literal_column(repr(p)), Float) * cast(ranked.c.n - 1, Float)
        lower = floor(position)

        def value_at(rank):
            return cast(func.max(case((and_(ranked.c.below <= rank, rank < ranked.c.upto), ranked.c.v))), Float)

        lo = value_at(lower)
        hi = func.coalesce(value_at(lower + 1), lo)  # lower + 1 == n only when n == 1
        columns.append(lo + func.max(position - lower) * (hi - lo))
    row = session.execute(select(*columns).select_from(ranked)).one()
    return tuple(None if v is None else float(v) for v in row)


def _floor(session: Session):
    # Positions are never negative, so SQLite's integer cast truncates to the floor; PostgreSQL's
    # cast would round, so it gets floor().
    if session.get_bind().dialect.name == "sqlite":
        return lambda x: cast(x, Integer)
    return func.floor


def _day_column(session: Session):
    # created_at is stored as naive UTC, so its date part is the UTC calendar day. SQLite stores
    # it as text "YYYY-MM-DD HH:MM:SS.ffffff": the day is its first ten characters (SQLite's
    # date() works in milliseconds and answers NULL for 9999-12-31 23:59:59.9995 and after).
    if session.get_bind().dialect.name == "sqlite":
        return func.substr(Job.created_at, 1, 10)
    return cast(Job.created_at, Date)


@dataclass(frozen=True)
class DayCounts(Counts):
    day: date


def by_day(session: Session, *, scope: Scope) -> list[DayCounts]:
    """One row per UTC calendar day that had jobs, ascending."""
    rows = _breakdown(session, scope, "day")
    return [DayCounts(**_counts(r), day=r.k if isinstance(r.k, date) else date.fromisoformat(r.k)) for r in rows]


@dataclass(frozen=True)
class KeyCounts(Counts):
    id: uuid.UUID


def _by(session: Session, key: str, scope: Scope, *raw_where: ColumnElement[bool]) -> list[KeyCounts]:
    return [KeyCounts(**_counts(r), id=r.k) for r in _breakdown(session, scope, key, *raw_where)]


def by_engine(session: Session, *, scope: Scope) -> list[KeyCounts]:
    """One row per engine id that had jobs, deleted engines included."""
    return _by(session, "engine_id", scope)


def by_consumer(session: Session, *, scope: Scope) -> list[KeyCounts]:
    """One row per consumer id that had jobs, archived consumers included; test-key jobs left out."""
    return _by(session, "consumer_id", scope, Job.consumer_id.is_not(None))


def by_version(session: Session, *, scope: Scope) -> list[KeyCounts]:
    """One row per version id that had jobs, deleted versions included."""
    return _by(session, "version_id", scope)


def _latest(session: Session, scope: Scope, key: str, id_: uuid.UUID, names: tuple[str, ...]) -> tuple:
    """``names`` as the latest job of the scope with ``key`` == ``id_`` recorded them."""
    table = _count_table(scope, key)
    for piece in reversed(pieces(scope)):  # the latest piece first
        if isinstance(piece, Days):
            query = (
                select(*(table.c[n] for n in names)).where(*_rollup_where(table, scope, piece), table.c[key] == id_)
                .order_by(table.c.last_created_at.desc())
            )
        else:
            query = select(*(getattr(Job, n) for n in names)).where(piece.where(), getattr(Job, key) == id_).order_by(Job.created_at.desc())
        row = session.execute(query.limit(1)).first()
        if row is not None:
            return tuple(row)
    raise LookupError(f"no job of {key} {id_} in the scope")


def recorded_engine(session: Session, *, scope: Scope, engine_id: uuid.UUID) -> tuple[str, str]:
    """Name and slug of an engine as its latest job in the scope recorded them."""
    return _latest(session, scope, "engine_id", engine_id, ("engine_name", "engine_slug"))


def recorded_consumer(session: Session, *, scope: Scope, consumer_id: uuid.UUID) -> str:
    """Name of a consumer as its latest job in the scope recorded it."""
    return _latest(session, scope, "consumer_id", consumer_id, ("consumer_name",))[0] or ""


def recorded_version(session: Session, *, scope: Scope, version_id: uuid.UUID) -> str:
    """Version string of a version as its latest job in the scope recorded it."""
    return _latest(session, scope, "version_id", version_id, ("version",))[0]


@dataclass(frozen=True)
class EngineNow:
    """An engine as it is now: its current name, slug and active version string."""

    name: str
    slug: str
    active_version: str | None


def current_engines(session: Session, *, tenant_id: uuid.UUID, engine_ids: list[uuid.UUID]) -> dict[uuid.UUID, EngineNow]:
    """The engines among ``engine_ids`` that still exist, by id."""
    if not engine_ids:
        return {}
    rows = session.execute(
        select(Engine.id, Engine.name, Engine.slug, EngineVersion.version)
        .outerjoin(EngineVersion, and_(EngineVersion.id == Engine.active_version_id, EngineVersion.tenant_id == tenant_id))
        .where(Engine.tenant_id == tenant_id, Engine.id.in_(engine_ids))
    )
    return {r.id: EngineNow(r.name, r.slug, r.version) for r in rows}


@dataclass(frozen=True)
class ConsumerNow:
    name: str
    is_archived: bool


def current_consumers(session: Session, *, tenant_id: uuid.UUID, consumer_ids: list[uuid.UUID]) -> dict[uuid.UUID, ConsumerNow]:
    """The consumers among ``consumer_ids`` (archived ones too), by id."""
    if not consumer_ids:
        return {}
    rows = session.execute(
        select(Consumer.id, Consumer.name, Consumer.is_archived).where(Consumer.tenant_id == tenant_id, Consumer.id.in_(consumer_ids))
    )
    return {r.id: ConsumerNow(r.name, r.is_archived) for r in rows}


def current_versions(session: Session, *, tenant_id: uuid.UUID, version_ids: list[uuid.UUID]) -> dict[uuid.UUID, str]:
    """Version strings of the versions among ``version_ids`` that still exist, by id."""
    if not version_ids:
        return {}
    rows = session.execute(
        select(EngineVersion.id, EngineVersion.version).where(EngineVersion.tenant_id == tenant_id, EngineVersion.id.in_(version_ids))
    )
    return {r.id: r.version for r in rows}
