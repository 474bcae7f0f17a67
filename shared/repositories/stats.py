"""Usage statistics over jobs: SQL aggregation only, never one Python object per job.

Every query takes ``tenant_id`` and the period's inclusive bounds (``None`` where open), and
optionally narrows to one engine or one consumer. Counts, sums and groupings are plain
``GROUP BY``; percentiles are PostgreSQL's ``percentile_cont`` and, on SQLite, the same linear
interpolation written with window functions, in the same floating-point steps, so both
databases return identical numbers.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, datetime

from sqlalchemy import ARRAY, ColumnElement, Date, Float, Integer, and_, case, cast, func, literal_column, select, type_coerce
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
    time_sum: int | None
    time_count: int


@dataclass(frozen=True)
class Summary(Counts):
    test_calls: int
    percentiles: tuple[float | None, ...]


def _aggregates() -> list:
    return [
        func.count().label("total"),
        func.count().filter(Job.status == JobStatus.COMPLETED.value).label("successful"),
        func.count().filter(Job.status == JobStatus.FAILED.value).label("failed"),
        func.sum(Job.execution_time_ms).label("time_sum"),
        func.count(Job.execution_time_ms).label("time_count"),
    ]


def _counts(row) -> dict:
    return dict(
        total=row.total, successful=row.successful, failed=row.failed,
        time_sum=None if row.time_sum is None else int(row.time_sum), time_count=row.time_count,
    )


def summary(session: Session, *, scope: Scope, with_percentiles: bool) -> Summary:
    """Totals over the scope; the 50th, 95th and 99th percentile of execution time on request."""
    columns = [*_aggregates(), func.count().filter(Job.is_test.is_(True)).label("test_calls")]
    postgres = session.get_bind().dialect.name == "postgresql"
    if with_percentiles and postgres:
        wanted = literal_column("ARRAY[" + ",".join(repr(p) for p in PERCENTILES) + "]::float8[]")
        exact = func.percentile_cont(wanted).within_group(Job.execution_time_ms)
        columns.append(type_coerce(exact, ARRAY(Float)).label("percentiles"))
    row = session.execute(select(*columns).where(scope.where())).one()
    if not with_percentiles:
        percentiles: tuple[float | None, ...] = ()
    elif postgres:
        percentiles = tuple(row.percentiles) if row.percentiles is not None else (None,) * len(PERCENTILES)
    else:
        percentiles = _percentiles_by_window(session, scope=scope)
    return Summary(**_counts(row), test_calls=row.test_calls, percentiles=percentiles)


def _percentiles_by_window(session: Session, *, scope: Scope) -> tuple[float | None, ...]:
    """``percentile_cont`` for databases without it: rank the recorded times, interpolate.

    PostgreSQL computes ``lo + (p*(n-1) - floor(p*(n-1))) * (hi - lo)`` in float8, where lo and
    hi are the values at 0-based ranks floor(p*(n-1)) and the next one; this is the same
    expression, evaluated the same way in SQLite's doubles.
    """
    ranked = (
        select(
            Job.execution_time_ms.label("v"),
            (func.row_number().over(order_by=Job.execution_time_ms) - 1).label("rn"),
            func.count().over().label("n"),
        )
        .where(scope.where(), Job.execution_time_ms.is_not(None))
        .subquery()
    )
    columns = []
    for p in PERCENTILES:
        position = literal_column(repr(p)) * (ranked.c.n - 1)
        lower_rank = cast(position, Integer)  # truncation is floor: positions are never negative
        lo = func.max(case((ranked.c.rn == lower_rank, ranked.c.v)))
        hi = func.coalesce(func.max(case((ranked.c.rn == lower_rank + 1, ranked.c.v))), lo)
        fraction = func.max(position - lower_rank)
        columns.append(type_coerce(lo + fraction * (hi - lo), Float))
    row = session.execute(select(*columns).select_from(ranked)).one()
    return tuple(None if v is None else float(v) for v in row)


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
class NamedCounts(Counts):
    """Counts for one engine, consumer or version, with the name its most recent job recorded."""

    id: uuid.UUID
    name: str
    slug: str | None = None


def _merge(rows) -> list[NamedCounts]:
    # Grouped by id *and* recorded name, so a renamed engine spans several rows: add them up
    # and keep the name its most recent job recorded.
    merged: dict[uuid.UUID, dict] = {}
    for r in sorted(rows, key=lambda r: r.last_seen):
        item = merged.setdefault(r.id, dict(id=r.id, total=0, successful=0, failed=0, time_sum=None, time_count=0))
        item.update(name=r.name, slug=getattr(r, "slug", None))
        for key in ("total", "successful", "failed", "time_count"):
            item[key] += getattr(r, key)
        if r.time_sum is not None:
            item["time_sum"] = (item["time_sum"] or 0) + int(r.time_sum)
    return [NamedCounts(**item) for item in merged.values()]


def by_engine(session: Session, *, scope: Scope) -> list[NamedCounts]:
    """One row per engine that had jobs, deleted engines included."""
    keys = (Job.engine_id.label("id"), Job.engine_name.label("name"), Job.engine_slug.label("slug"))
    rows = session.execute(
        select(*keys, *_aggregates(), func.max(Job.created_at).label("last_seen")).where(scope.where()).group_by(*keys)
    )
    return _merge(rows)


def by_consumer(session: Session, *, scope: Scope) -> list[NamedCounts]:
    """One row per consumer that had jobs, archived consumers included; test-key jobs left out."""
    keys = (Job.consumer_id.label("id"), Job.consumer_name.label("name"))
    rows = session.execute(
        select(*keys, *_aggregates(), func.max(Job.created_at).label("last_seen"))
        .where(scope.where(), Job.consumer_id.is_not(None))
        .group_by(*keys)
    )
    return _merge(rows)


def by_version(session: Session, *, scope: Scope) -> list[NamedCounts]:
    """One row per engine version that had jobs, deleted versions included."""
    keys = (Job.version_id.label("id"), Job.version.label("name"))
    rows = session.execute(
        select(*keys, *_aggregates(), func.max(Job.created_at).label("last_seen")).where(scope.where()).group_by(*keys)
    )
    return _merge(rows)


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
