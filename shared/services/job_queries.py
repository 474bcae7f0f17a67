"""Job history for management screens: an engine's jobs, filtered and paged, and its latest ones;
the tenant's jobs across its engines."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy.orm import Session

from shared.db.models import Job
from shared.repositories import job_queries as repo
from shared.services import engines as engine_service


@dataclass
class JobPage:
    """One page of jobs and how many match the filter in all."""

    jobs: list[Job]
    total: int


def list_for_engine(
    session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, status: str | None, limit: int, offset: int
) -> JobPage:
    """An engine's jobs (consumers' and test keys'), newest first, optionally of one status."""
    engine_service.get(session, tenant_id=tenant_id, engine_id=engine_id)
    return JobPage(
        jobs=repo.list_for_engine(session, tenant_id=tenant_id, engine_id=engine_id, status=status, limit=limit, offset=offset),
        total=repo.count_for_engine(session, tenant_id=tenant_id, engine_id=engine_id, status=status),
    )


def list_for_tenant(
    session: Session, *, tenant_id: uuid.UUID, status: str | None, engine_id: uuid.UUID | None, search: str | None,
    limit: int, offset: int,
) -> JobPage:
    """The tenant's jobs on every engine (deleted ones' too), newest first, optionally of one status or
    engine, or matching ``search`` (part of an engine's name or slug or a consumer's name, or a job id)."""
    search = (search or "").strip() or None
    return JobPage(
        jobs=repo.list_for_tenant(session, tenant_id=tenant_id, status=status, engine_id=engine_id, search=search, limit=limit, offset=offset),
        total=repo.count_for_tenant(session, tenant_id=tenant_id, status=status, engine_id=engine_id, search=search),
    )


def recent_for_engine(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, limit: int) -> list[Job]:
    """An engine's latest jobs, most recent first."""
    engine_service.get(session, tenant_id=tenant_id, engine_id=engine_id)
    return repo.list_for_engine(session, tenant_id=tenant_id, engine_id=engine_id, status=None, limit=limit, offset=0)
