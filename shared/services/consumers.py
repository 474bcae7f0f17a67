"""Consumers (API clients), their lifecycle (active, inactive, archived) and their per-engine access."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy.orm import Session

from shared.db.models import Consumer, Engine, EngineAccess, EngineVersion, Tenant
from shared.db.types import utcnow
from shared.errors import NotFound
from shared.repositories import consumers as repo
from shared.repositories import engines as engine_repo
from shared.security import digest, mask_key, new_api_key
from shared.services import engines as engine_service

CONSUMER_NOT_FOUND = "Consumer not found"
ACCESS_NOT_FOUND = "This consumer has no access to this engine"
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


def grant(
    session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, consumer_id: uuid.UUID,
    can_execute: bool | None = None, can_view_jobs: bool | None = None,
    can_download: bool | None = None, can_view_about: bool | None = None,
) -> EngineAccess:
    """Create or update a consumer's access to an engine; a flag left as None keeps its value (false when new)."""
    flags = dict(can_execute=can_execute, can_view_jobs=can_view_jobs, can_download=can_download, can_view_about=can_view_about)
    engine_service.get(session, tenant_id=tenant_id, engine_id=engine_id)
    get(session, tenant_id=tenant_id, consumer_id=consumer_id)
    access = engine_repo.get_access(session, tenant_id=tenant_id, engine_id=engine_id, consumer_id=consumer_id)
    if access is None:
        access = EngineAccess(tenant_id=tenant_id, engine_id=engine_id, consumer_id=consumer_id)
        session.add(access)
    for flag, value in flags.items():
        if value is not None:
            setattr(access, flag, bool(value))
    access.updated_at = utcnow()
    session.flush()
    return access


def list_for_tenant(session: Session, *, tenant_id: uuid.UUID, include_inactive: bool = False) -> list[Consumer]:
    """The tenant's consumers that are not archived; only the active ones unless asked."""
    return repo.list_consumers(session, tenant_id=tenant_id, include_inactive=include_inactive)


def update(session: Session, *, tenant_id: uuid.UUID, consumer_id: uuid.UUID, is_active: bool | None) -> Consumer:
    """Activate or deactivate a consumer (None leaves it as it is); an inactive key fails at once."""
    consumer = get(session, tenant_id=tenant_id, consumer_id=consumer_id)
    if is_active is not None:
        consumer.is_active = is_active
        session.flush()
    return consumer


def archive(session: Session, *, tenant_id: uuid.UUID, consumer_id: uuid.UUID) -> Consumer:
    """Soft-delete: archived and deactivated, so its key fails at once; its jobs and stats stay."""
    consumer = get(session, tenant_id=tenant_id, consumer_id=consumer_id)
    consumer.is_archived = True
    consumer.is_active = False
    session.flush()
    return consumer


def revoke(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, consumer_id: uuid.UUID) -> None:
    """Remove all of a consumer's access to an engine; NotFound when it had none."""
    engine_service.get(session, tenant_id=tenant_id, engine_id=engine_id)
    get(session, tenant_id=tenant_id, consumer_id=consumer_id)
    if not engine_repo.delete_access(session, tenant_id=tenant_id, engine_id=engine_id, consumer_id=consumer_id):
        raise NotFound(ACCESS_NOT_FOUND)


def list_engine_access(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID) -> list[tuple[EngineAccess, Consumer]]:
    """Who may call this engine, and how: every non-archived consumer with an access record."""
    engine_service.get(session, tenant_id=tenant_id, engine_id=engine_id)
    return engine_repo.list_access_for_engines(session, tenant_id=tenant_id, engine_ids=[engine_id])


def list_consumer_access(session: Session, *, tenant_id: uuid.UUID, consumer_id: uuid.UUID) -> list[tuple[EngineAccess, Engine, EngineVersion | None]]:
    """The engines this consumer may call, each with its active version (or None)."""
    get(session, tenant_id=tenant_id, consumer_id=consumer_id)
    return engine_repo.list_access_for_consumer(session, tenant_id=tenant_id, consumer_id=consumer_id)
