"""The release history: one row per activation of an engine's version."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.orm import Session

from shared.db.models import Release


def add(session: Session, release: Release) -> Release:
    """Insert a release."""
    session.add(release)
    session.flush()
    return release


def list_for_engine(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, limit: int, offset: int) -> list[Release]:
    """The engine's releases, newest first."""
    return list(session.scalars(
        select(Release).where(Release.tenant_id == tenant_id, Release.engine_id == engine_id)
        .order_by(Release.activated_at.desc(), Release.id.desc()).limit(limit).offset(offset)
    ))


def latest_for_engine(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID) -> Release | None:
    """The engine's most recent release."""
    rows = list_for_engine(session, tenant_id=tenant_id, engine_id=engine_id, limit=1, offset=0)
    return rows[0] if rows else None
