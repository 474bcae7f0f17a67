"""Idempotency keys: bound to a job once, per tenant and caller, taken over only once expired."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from shared.db.models import IdempotencyKey

TABLE = IdempotencyKey.__table__


def get(session: Session, *, tenant_id: uuid.UUID, caller: str, key: str) -> IdempotencyKey | None:
    """The key as stored (expired or not)."""
    return session.scalar(
        select(IdempotencyKey).where(IdempotencyKey.tenant_id == tenant_id, IdempotencyKey.caller == caller, IdempotencyKey.key == key)
    )


def bind(
    session: Session, *, tenant_id: uuid.UUID, caller: str, key: str, request_hash: str, job_id: uuid.UUID,
    now: datetime, expired_before: datetime,
) -> bool:
    """Bind the key to ``job_id``, or take it over when its binding is older than ``expired_before``;
    False when a live binding holds it. On PostgreSQL a concurrent binder's uncommitted insert is
    waited for (the unique key), so False means the winner has committed and can be read."""
    insert = (sqlite.insert if session.get_bind().dialect.name == "sqlite" else postgresql.insert)(TABLE)
    statement = insert.values(
        tenant_id=tenant_id, caller=caller, key=key, request_hash=request_hash, job_id=job_id, created_at=now
    )
    statement = statement.on_conflict_do_update(
        index_elements=[TABLE.c.tenant_id, TABLE.c.caller, TABLE.c.key],
        set_=dict(request_hash=statement.excluded.request_hash, job_id=statement.excluded.job_id, created_at=statement.excluded.created_at),
        where=TABLE.c.created_at < expired_before,
    ).returning(TABLE.c.job_id)
    return session.execute(statement).first() is not None


def unbind(session: Session, *, job_id: uuid.UUID) -> None:
    """Free the key of a job that could not be queued, so a retry with it makes a new job."""
    session.execute(TABLE.delete().where(TABLE.c.job_id == job_id))
