"""Usage statistics over jobs: SQL aggregation only, never one Python object per job.

Every query takes a ``Scope``: the tenant, the period's inclusive bounds (``None`` where
open), optionally one engine or one consumer. Each breakdown is one ``GROUP BY`` on a single
key, which PostgreSQL answers with a parallel hash aggregate over an index-only scan of the
covering indexes in migration 0003.

Percentiles are exactly PostgreSQL's ``percentile_cont`` (linear interpolation between the
values at 0-based ranks floor(p*(n-1)) and the next), computed from a histogram of the recorded
times (``GROUP BY execution_time_ms``, then running counts): the same SQL on SQLite and
PostgreSQL, in the same float8 steps, and several times faster than sorting every time.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, datetime

from sqlalchemy import ColumnElement, Date, Float, Integer, and_, case, cast, func, literal_column, select, text
from sqlalchemy.orm import Session

from shared.db.models import Consumer, Engine, EngineVersion, Job, JobStatus

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
        func.count().filter(Job.status == JobStatus.COMPLETED.value).label("successful"),
        func.count().filter(Job.status == JobStatus.FAILED.value).label("failed"),
        func.count().filter(Job.is_test.is_(True)).label("test_calls"),
        func.sum(Job.execution_time_ms).label("time_sum"),
        func.count(Job.execution_time_ms).label("time_count"),
    ]


def _counts(row) -> dict:
    return dict(
        total=row.total, successful=row.successful, failed=row.failed, test_calls=row.test_calls,
        time_sum=None if row.time_sum is None else int(row.time_sum), time_count=row.time_count,
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


def percentiles(session: Session, *, scope: Scope) -> tuple[float | None, ...]:
    """The 50th, 95th and 99th percentile of execution_time_ms over the scope, as percentile_cont."""
    histogram = (
        select(Job.execution_time_ms.label("v"), func.count().label("c"))
        .where(scope.where(), Job.execution_time_ms.is_not(None))
        .group_by(Job.execution_time_ms)
        .subquery()
    )
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
    # created_at is stored as naive UTC, so its date part is the UTC calendar day.
    if session.get_bind().dialect.name == "sqlite":
        return func.date(Job.created_at)
    return cast(Job.created_at, Date)


@dataclass(frozen=True)
class DayCounts(Counts):
    day: date


def by_day(session: Session, *, scope: Scope) -> list[DayCounts]:
    """One row per UTC calendar day that had jobs, ascending."""
    day = _day_column(session).label("day")
    rows = session.execute(select(day, *_aggregates()).where(scope.where()).group_by(day).order_by(day))
    return [DayCounts(**_counts(r), day=r.day if isinstance(r.day, date) else date.fromisoformat(r.day)) for r in rows]


@dataclass(frozen=True)
class KeyCounts(Counts):
    id: uuid.UUID


def _by(session: Session, key, scope: Scope, *extra: ColumnElement[bool]) -> list[KeyCounts]:
    rows = session.execute(select(key.label("id"), *_aggregates()).where(scope.where(), *extra).group_by(key))
    return [KeyCounts(**_counts(r), id=r.id) for r in rows]


def by_engine(session: Session, *, scope: Scope) -> list[KeyCounts]:
    """One row per engine id that had jobs, deleted engines included."""
    return _by(session, Job.engine_id, scope)


def by_consumer(session: Session, *, scope: Scope) -> list[KeyCounts]:
    """One row per consumer id that had jobs, archived consumers included; test-key jobs left out."""
    return _by(session, Job.consumer_id, scope, Job.consumer_id.is_not(None))


def by_version(session: Session, *, scope: Scope) -> list[KeyCounts]:
    """One row per version id that had jobs, deleted versions included."""
    return _by(session, Job.version_id, scope)


def _latest(session: Session, scope: Scope, columns, *where: ColumnElement[bool]):
    return session.execute(select(*columns).where(scope.where(), *where).order_by(Job.created_at.desc()).limit(1)).one()


def recorded_engine(session: Session, *, scope: Scope, engine_id: uuid.UUID) -> tuple[str, str]:
    """Name and slug of an engine as its latest job in the scope recorded them."""
    return tuple(_latest(session, scope, (Job.engine_name, Job.engine_slug), Job.engine_id == engine_id))


def recorded_consumer(session: Session, *, scope: Scope, consumer_id: uuid.UUID) -> str:
    """Name of a consumer as its latest job in the scope recorded it."""
    return _latest(session, scope, (Job.consumer_name,), Job.consumer_id == consumer_id)[0] or ""


def recorded_version(session: Session, *, scope: Scope, version_id: uuid.UUID) -> str:
    """Version string of a version as its latest job in the scope recorded it."""
    return _latest(session, scope, (Job.version,), Job.version_id == version_id)[0]


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
