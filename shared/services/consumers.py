"""Consumers (API clients) and their per-engine access."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy.orm import Session

from shared.db.models import Consumer, EngineAccess, Tenant
from shared.db.types import utcnow
from shared.errors import NotFound
from shared.repositories import consumers as repo
from shared.repositories import engines as engine_repo
from shared.security import digest, mask_key, new_api_key
from shared.services import engines as engine_service

CONSUMER_NOT_FOUND = "Consumer not found"
PERMISSIONS = ("can_execute", "can_view_jobs", "can_download", "can_view_about")


@dataclass
class CreatedConsumer:
    consumer: Consumer
    api_key: str


def create(session: Session, *, tenant: Tenant, name: str) -> CreatedConsumer:
    """Create a consumer and its API key (returned once, stored hashed)."""
    key = new_api_key(tenant.slug)
    consumer = Consumer(tenant_id=tenant.id, name=name, api_key_hash=digest(key), api_key_hint=mask_key(key))
    session.add(consumer)
    session.flush()
    return CreatedConsumer(consumer=consumer, api_key=key)


def get(session: Session, *, tenant_id: uuid.UUID, consumer_id: uuid.UUID) -> Consumer:
    """A non-archived consumer of this tenant; NotFound otherwise."""
    consumer = repo.get_consumer(session, tenant_id=tenant_id, consumer_id=consumer_id)
    if consumer is None or consumer.is_archived:
        raise NotFound(CONSUMER_NOT_FOUND)
    return consumer


def grant(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, consumer_id: uuid.UUID, flags: dict[str, bool]) -> EngineAccess:
    """Create or update a consumer's access to an engine."""
    engine_service.get(session, tenant_id=tenant_id, engine_id=engine_id)
    get(session, tenant_id=tenant_id, consumer_id=consumer_id)
    access = engine_repo.get_access(session, tenant_id=tenant_id, engine_id=engine_id, consumer_id=consumer_id)
    if access is None:
        access = EngineAccess(tenant_id=tenant_id, engine_id=engine_id, consumer_id=consumer_id)
        session.add(access)
    for flag in PERMISSIONS:
        if flags.get(flag) is not None:
            setattr(access, flag, bool(flags[flag]))
    access.updated_at = utcnow()
    session.flush()
    return access
