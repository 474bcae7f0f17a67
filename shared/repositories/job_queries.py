"""Reading job history for management screens: an engine's jobs, or the tenant's, filtered and paged."""

from __future__ import annotations

import uuid

from sqlalchemy import Select, func, or_, select
from sqlalchemy.orm import Session

from shared.db.models import Job


def _engine_jobs(*, tenant_id: uuid.UUID, engine_id: uuid.UUID, status: str | None) -> Select:
    query = select(Job).where(Job.tenant_id == tenant_id, Job.engine_id == engine_id)
    return query.where(Job.status == status) if status else query


def list_for_engine(
    session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, status: str | None, limit: int, offset: int
) -> list[Job]:
    """One page of an engine's jobs, newest first."""
    query = _engine_jobs(tenant_id=tenant_id, engine_id=engine_id, status=status)
    return list(session.scalars(query.order_by(Job.created_at.desc(), Job.id.desc()).limit(limit).offset(offset)))


def count_for_engine(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, status: str | None) -> int:
    """How many of an engine's jobs match the filter."""
    query = _engine_jobs(tenant_id=tenant_id, engine_id=engine_id, status=status)
    return session.scalar(select(func.count()).select_from(query.subquery())) or 0


def _tenant_jobs(*, tenant_id: uuid.UUID, status: str | None, engine_id: uuid.UUID | None, search: str | None) -> Select:
    query = select(Job).where(Job.tenant_id == tenant_id)
    if status:
        query = query.where(Job.status == status)
    if engine_id:
        query = query.where(Job.engine_id == engine_id)
    if search:
        words = search.lower()
        matches = [func.lower(column).contains(words, autoescape=True) for column in (Job.engine_name, Job.engine_slug, Job.consumer_name)]
        try:
            matches.append(Job.id == uuid.UUID(search))
        except ValueError:
            pass
        query = query.where(or_(*matches))
    return query


def list_for_tenant(
    session: Session, *, tenant_id: uuid.UUID, status: str | None, engine_id: uuid.UUID | None, search: str | None,
    limit: int, offset: int,
) -> list[Job]:
    """One page of the tenant's jobs across its engines, newest first."""
    query = _tenant_jobs(tenant_id=tenant_id, status=status, engine_id=engine_id, search=search)
    return list(session.scalars(query.order_by(Job.created_at.desc(), Job.id.desc()).limit(limit).offset(offset)))


def count_for_tenant(
    session: Session, *, tenant_id: uuid.UUID, status: str | None, engine_id: uuid.UUID | None, search: str | None
) -> int:
    """How many of the tenant's jobs match the filter."""
    query = _tenant_jobs(tenant_id=tenant_id, status=status, engine_id=engine_id, search=search)
    return session.scalar(select(func.count()).select_from(query.subquery())) or 0
