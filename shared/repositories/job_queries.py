"""Reading job history for management screens: an engine's jobs, filtered and paged."""

from __future__ import annotations

import uuid

from sqlalchemy import Select, func, select
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
