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

The functions return plain dicts shaped as the response records of ``shared.api.schemas_stats``.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime

from sqlalchemy.orm import Session

from shared.errors import Invalid, NotFound
from shared.repositories import consumers as consumer_repo
from shared.repositories import stats as repo
from shared.repositories.stats import Counts, NamedCounts, Scope
from shared.services import engines as engine_service
from shared.services.consumers import CONSUMER_NOT_FOUND


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _counts(c: Counts) -> dict:
    return {"total_calls": c.total, "successful_calls": c.successful, "failed_calls": c.failed}


def _rates(c: Counts) -> dict:
    return {
        **_counts(c),
        "success_rate": round(100 * c.successful / c.total, 2) if c.total else 0.0,
        "avg_execution_time_ms": _round(c.time_sum / c.time_count) if c.time_count else None,
    }


def _summary(session: Session, scope: Scope, *, with_percentiles: bool) -> dict:
    s = repo.summary(session, scope=scope, with_percentiles=with_percentiles)
    body = _rates(s)
    if with_percentiles:
        p50, p95, p99 = (_round(p) for p in s.percentiles)
        body.update(test_calls=s.test_calls, p50_execution_time_ms=p50, p95_execution_time_ms=p95, p99_execution_time_ms=p99)
    return body


def _most_calls_first(items: list[NamedCounts]) -> list[NamedCounts]:
    return sorted(items, key=lambda i: (-i.total, i.name, str(i.id)))


def _by_day(session: Session, scope: Scope) -> list[dict]:
    return [
        {"date": d.day.isoformat(), **_counts(d), "avg_execution_time_ms": _rates(d)["avg_execution_time_ms"]}
        for d in repo.by_day(session, scope=scope)
    ]


def _by_engine(session: Session, scope: Scope) -> list[dict]:
    rows = repo.by_engine(session, scope=scope)
    now = repo.current_engines(session, tenant_id=scope.tenant_id, engine_ids=[r.id for r in rows])
    named = [replace(r, name=now[r.id].name, slug=now[r.id].slug) if r.id in now else r for r in rows]
    return [
        {
            "engine_id": r.id, "engine_name": r.name, "engine_slug": r.slug,
            "active_version_slug": now[r.id].active_version if r.id in now else None,
            "is_deleted": r.id not in now, **_rates(r),
        }
        for r in _most_calls_first(named)
    ]


def _by_consumer(session: Session, scope: Scope) -> list[dict]:
    rows = repo.by_consumer(session, scope=scope)
    now = repo.current_consumers(session, tenant_id=scope.tenant_id, consumer_ids=[r.id for r in rows])
    named = [replace(r, name=now[r.id].name) if r.id in now else r for r in rows]
    return [
        # Consumers are archived, never removed; a missing row is treated as archived.
        {"consumer_id": r.id, "consumer_name": r.name, "is_archived": now[r.id].is_archived if r.id in now else True, **_rates(r)}
        for r in _most_calls_first(named)
    ]


def _by_version(session: Session, scope: Scope, *, active_version_id: uuid.UUID | None) -> list[dict]:
    rows = repo.by_version(session, scope=scope)
    now = repo.current_versions(session, tenant_id=scope.tenant_id, version_ids=[r.id for r in rows])
    named = [replace(r, name=now[r.id]) if r.id in now else r for r in rows]
    return [
        {"version_id": r.id, "version": r.name, "is_active": r.id == active_version_id, "is_deleted": r.id not in now, **_rates(r)}
        for r in _most_calls_first(named)
    ]


def _check(start: datetime | None, end: datetime | None) -> None:
    if start is not None and end is not None and start > end:
        raise Invalid("start_date is after end_date")


def for_tenant(session: Session, *, tenant_id: uuid.UUID, start: datetime | None, end: datetime | None) -> dict:
    """The tenant's statistics across all engines and consumers."""
    _check(start, end)
    scope = Scope(tenant_id=tenant_id, start=start, end=end)
    return {
        "tenant_id": tenant_id,
        "period": {"start_date": start, "end_date": end},
        "summary": _summary(session, scope, with_percentiles=True),
        "by_day": _by_day(session, scope),
        "by_engine": _by_engine(session, scope),
        "by_consumer": _by_consumer(session, scope),
    }


def for_engine(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, start: datetime | None, end: datetime | None) -> dict:
    """One existing engine's statistics; NotFound for an engine that is not (or no longer) there."""
    _check(start, end)
    engine = engine_service.get(session, tenant_id=tenant_id, engine_id=engine_id)
    scope = Scope(tenant_id=tenant_id, start=start, end=end, engine_id=engine.id)
    return {
        "engine_id": engine.id,
        "engine_name": engine.name,
        "engine_slug": engine.slug,
        "period": {"start_date": start, "end_date": end},
        "summary": _summary(session, scope, with_percentiles=True),
        "by_consumer": _by_consumer(session, scope),
        "by_day": _by_day(session, scope),
        "by_version": _by_version(session, scope, active_version_id=engine.active_version_id),
    }


def for_consumer(session: Session, *, tenant_id: uuid.UUID, consumer_id: uuid.UUID, start: datetime | None, end: datetime | None) -> dict:
    """One consumer's statistics, archived consumers included (their history is kept)."""
    _check(start, end)
    consumer = consumer_repo.get_consumer(session, tenant_id=tenant_id, consumer_id=consumer_id)
    if consumer is None:
        raise NotFound(CONSUMER_NOT_FOUND)
    scope = Scope(tenant_id=tenant_id, start=start, end=end, consumer_id=consumer.id)
    return {
        "consumer_id": consumer.id,
        "consumer_name": consumer.name,
        "is_archived": consumer.is_archived,
        "period": {"start_date": start, "end_date": end},
        "summary": _summary(session, scope, with_percentiles=False),
        "by_engine": _by_engine(session, scope),
        "by_day": _by_day(session, scope),
    }
