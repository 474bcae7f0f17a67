"""Usage statistics for a tenant, an engine or a consumer: which jobs count, and how.

Rules, in one place:

- Every job created in the period counts in ``total_calls``; completed jobs are successful,
  failed jobs failed, pending and processing jobs neither.
- ``success_rate`` is a percentage (0..100, 2 decimals), 0 when there were no calls.
- Execution times (average, percentiles) cover the jobs that recorded one.
- Deleted engines and versions count under the name their latest job recorded; existing
  engines and consumers (archived ones included) under their current names.
- Test-key jobs (no consumer) are real executions of a version: they count in tenant and engine
  figures, are reported as ``test_calls``, and are never shown as a consumer.

The functions return dataclasses named after what they report; ``shared.api.presenters.stats``
shapes them into the response bodies.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from shared.errors import Invalid, NotFound
from shared.repositories import consumers as consumer_repo
from shared.repositories import stats as repo
from shared.repositories.stats import Counts, KeyCounts, Scope
from shared.services import engines as engine_service
from shared.services.consumers import CONSUMER_NOT_FOUND


@dataclass(frozen=True)
class Figures:
    """What every breakdown reports: the calls, how they ended, the success rate, the mean time."""

    total_calls: int
    successful_calls: int
    failed_calls: int
    success_rate: float
    avg_execution_time_ms: float | None


@dataclass(frozen=True)
class Summary(Figures):
    """A period's figures; tenant and engine summaries add test calls and percentiles (None for a consumer)."""

    test_calls: int | None = None
    p50_execution_time_ms: float | None = None
    p95_execution_time_ms: float | None = None
    p99_execution_time_ms: float | None = None


@dataclass(frozen=True)
class DayFigures:
    date: str
    total_calls: int
    successful_calls: int
    failed_calls: int
    avg_execution_time_ms: float | None


@dataclass(frozen=True)
class EngineFigures(Figures):
    engine_id: uuid.UUID
    engine_name: str
    engine_slug: str
    active_version_slug: str | None
    is_deleted: bool


@dataclass(frozen=True)
class ConsumerFigures(Figures):
    consumer_id: uuid.UUID
    consumer_name: str
    is_archived: bool


@dataclass(frozen=True)
class VersionFigures(Figures):
    version_id: uuid.UUID
    version: str
    is_active: bool
    is_deleted: bool


@dataclass(frozen=True)
class Period:
    start_date: datetime | None
    end_date: datetime | None


@dataclass(frozen=True)
class TenantStats:
    tenant_id: uuid.UUID
    period: Period
    summary: Summary
    by_day: list[DayFigures]
    by_engine: list[EngineFigures]
    by_consumer: list[ConsumerFigures]


@dataclass(frozen=True)
class EngineStats:
    engine_id: uuid.UUID
    engine_name: str
    engine_slug: str
    period: Period
    summary: Summary
    by_consumer: list[ConsumerFigures]
    by_day: list[DayFigures]
    by_version: list[VersionFigures]


@dataclass(frozen=True)
class ConsumerStats:
    consumer_id: uuid.UUID
    consumer_name: str
    is_archived: bool
    period: Period
    summary: Summary
    by_engine: list[EngineFigures]
    by_day: list[DayFigures]


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _counts(c: Counts) -> dict:
    return {"total_calls": c.total, "successful_calls": c.successful, "failed_calls": c.failed}


def _average(c: Counts) -> float | None:
    return _round(c.time_sum / c.time_count) if c.time_count else None


def _rates(c: Counts) -> dict:
    return {
        **_counts(c),
        "success_rate": round(100 * c.successful / c.total, 2) if c.total else 0.0,
        "avg_execution_time_ms": _average(c),
    }


def _summary(session: Session, scope: Scope, days: list[repo.DayCounts], *, with_percentiles: bool) -> Summary:
    # Every job falls on exactly one day, so the days add up to the summary: no extra pass.
    totals = repo.add_up(days)
    if not with_percentiles:
        return Summary(**_rates(totals))
    p50, p95, p99 = (_round(p) for p in repo.percentiles(session, scope=scope))
    return Summary(
        **_rates(totals), test_calls=totals.test_calls,
        p50_execution_time_ms=p50, p95_execution_time_ms=p95, p99_execution_time_ms=p99,
    )


def _by_day(days: list[repo.DayCounts]) -> list[DayFigures]:
    return [DayFigures(date=d.day.isoformat(), **_counts(d), avg_execution_time_ms=_average(d)) for d in days]


def _most_calls_first(items: list[tuple[str, KeyCounts, Any]]) -> list:
    return [figures for _, _, figures in sorted(items, key=lambda i: (-i[1].total, i[0], str(i[1].id)))]


def _by_engine(session: Session, scope: Scope) -> list[EngineFigures]:
    rows = repo.by_engine(session, scope=scope)
    now = repo.current_engines(session, tenant_id=scope.tenant_id, engine_ids=[r.id for r in rows])
    items = []
    for r in rows:
        live = now.get(r.id)
        name, slug = (live.name, live.slug) if live else repo.recorded_engine(session, scope=scope, engine_id=r.id)
        figures = EngineFigures(
            engine_id=r.id, engine_name=name, engine_slug=slug,
            active_version_slug=live.active_version if live else None, is_deleted=live is None, **_rates(r),
        )
        items.append((name, r, figures))
    return _most_calls_first(items)


def _by_consumer(session: Session, scope: Scope) -> list[ConsumerFigures]:
    rows = repo.by_consumer(session, scope=scope)
    now = repo.current_consumers(session, tenant_id=scope.tenant_id, consumer_ids=[r.id for r in rows])
    items = []
    for r in rows:
        live = now.get(r.id)
        # Consumers are archived, never removed; a missing row is reported as archived.
        name = live.name if live else repo.recorded_consumer(session, scope=scope, consumer_id=r.id)
        figures = ConsumerFigures(consumer_id=r.id, consumer_name=name, is_archived=live.is_archived if live else True, **_rates(r))
        items.append((name, r, figures))
    return _most_calls_first(items)


def _by_version(session: Session, scope: Scope, *, active_version_id: uuid.UUID | None) -> list[VersionFigures]:
    rows = repo.by_version(session, scope=scope)
    now = repo.current_versions(session, tenant_id=scope.tenant_id, version_ids=[r.id for r in rows])
    items = []
    for r in rows:
        version = now[r.id] if r.id in now else repo.recorded_version(session, scope=scope, version_id=r.id)
        figures = VersionFigures(version_id=r.id, version=version, is_active=r.id == active_version_id, is_deleted=r.id not in now, **_rates(r))
        items.append((version, r, figures))
    return _most_calls_first(items)


def _check(start: datetime | None, end: datetime | None) -> None:
    if start is not None and end is not None and start > end:
        raise Invalid("start_date is after end_date")


def for_tenant(session: Session, *, tenant_id: uuid.UUID, start: datetime | None, end: datetime | None) -> TenantStats:
    """The tenant's statistics across all engines and consumers."""
    _check(start, end)
    scope = Scope(tenant_id=tenant_id, start=start, end=end)
    repo.prepare(session)
    days = repo.by_day(session, scope=scope)
    return TenantStats(
        tenant_id=tenant_id,
        period=Period(start, end),
        summary=_summary(session, scope, days, with_percentiles=True),
        by_day=_by_day(days),
        by_engine=_by_engine(session, scope),
        by_consumer=_by_consumer(session, scope),
    )


def for_engine(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, start: datetime | None, end: datetime | None) -> EngineStats:
    """One existing engine's statistics; NotFound for an engine that is not (or no longer) there."""
    _check(start, end)
    engine = engine_service.get(session, tenant_id=tenant_id, engine_id=engine_id)
    scope = Scope(tenant_id=tenant_id, start=start, end=end, engine_id=engine.id)
    repo.prepare(session)
    days = repo.by_day(session, scope=scope)
    return EngineStats(
        engine_id=engine.id,
        engine_name=engine.name,
        engine_slug=engine.slug,
        period=Period(start, end),
        summary=_summary(session, scope, days, with_percentiles=True),
        by_consumer=_by_consumer(session, scope),
        by_day=_by_day(days),
        by_version=_by_version(session, scope, active_version_id=engine.active_version_id),
    )


def for_consumer(session: Session, *, tenant_id: uuid.UUID, consumer_id: uuid.UUID, start: datetime | None, end: datetime | None) -> ConsumerStats:
    """One consumer's statistics, archived consumers included (their history is kept)."""
    _check(start, end)
    consumer = consumer_repo.get_consumer(session, tenant_id=tenant_id, consumer_id=consumer_id)
    if consumer is None:
        raise NotFound(CONSUMER_NOT_FOUND)
    scope = Scope(tenant_id=tenant_id, start=start, end=end, consumer_id=consumer.id)
    repo.prepare(session)
    days = repo.by_day(session, scope=scope)
    return ConsumerStats(
        consumer_id=consumer.id,
        consumer_name=consumer.name,
        is_archived=consumer.is_archived,
        period=Period(start, end),
        summary=_summary(session, scope, days, with_percentiles=False),
        by_engine=_by_engine(session, scope),
        by_day=_by_day(days),
    )
