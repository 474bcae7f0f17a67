"""API consumers."""

from __future__ import annotations

import uuid

from sqlalchemy import and_, bindparam, select, update
from sqlalchemy.orm import Session

from shared.db.models import Consumer, EngineAccess
from shared.db.types import utcnow


def get_consumer(session: Session, *, tenant_id: uuid.UUID, consumer_id: uuid.UUID) -> Consumer | None:
    """A consumer of this tenant, archived or not."""
    return session.scalar(select(Consumer).where(Consumer.tenant_id == tenant_id, Consumer.id == consumer_id))


# Every consumer request looks its key up: one statement object, compiled once (see engines.py).
_BY_KEY_HASH = select(Consumer).where(Consumer.api_key_hash == bindparam("key_hash"))


def get_by_key_hash(session: Session, *, key_hash: str) -> Consumer | None:
    """The consumer whose API key hashes to ``key_hash``."""
    return session.scalar(_BY_KEY_HASH, {"key_hash": key_hash})


# The consumer and, in the same statement, its access record for the engine a request names.
_BY_KEY_HASH_WITH_ACCESS = select(Consumer, EngineAccess).outerjoin(
    EngineAccess,
    and_(
        EngineAccess.consumer_id == Consumer.id,
        EngineAccess.tenant_id == Consumer.tenant_id,
        EngineAccess.engine_id == bindparam("engine_id"),
    ),
).where(Consumer.api_key_hash == bindparam("key_hash"))


def get_by_key_hash_with_access(session: Session, *, key_hash: str, engine_id: uuid.UUID) -> tuple[Consumer | None, EngineAccess | None]:
    """The consumer whose API key hashes to ``key_hash`` and its access record for ``engine_id``
    (of its own tenant; None when it has none), in one statement."""
    row = session.execute(_BY_KEY_HASH_WITH_ACCESS, {"key_hash": key_hash, "engine_id": engine_id}).first()
    return (row[0], row[1]) if row is not None else (None, None)


def list_consumers(session: Session, *, tenant_id: uuid.UUID, include_inactive: bool = False) -> list[Consumer]:
    """The tenant's listed consumers: not archived and (unless asked otherwise) active, by name."""
    query = select(Consumer).where(Consumer.tenant_id == tenant_id, Consumer.is_archived.is_(False))
    if not include_inactive:
        query = query.where(Consumer.is_active.is_(True))
    return list(session.scalars(query.order_by(Consumer.name, Consumer.created_at)))


def touch(session: Session, *, consumer: Consumer, resolution_seconds: int = 60) -> None:
    """Record that the consumer's key was just used (at most one write a minute per consumer)."""
    now = utcnow()
    if consumer.last_used_at is None or (now - consumer.last_used_at).total_seconds() >= resolution_seconds:
        session.execute(update(Consumer).where(Consumer.id == consumer.id).values(last_used_at=now))
