"""Who is calling the consumer API: a consumer's key or a version's test key."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy.orm import Session

from shared.db.models import Consumer, EngineVersion
from shared.errors import Unauthorized
from shared.repositories import consumers as consumer_repo
from shared.repositories import engines as engine_repo
from shared.security import digest

INVALID_API_KEY = "Invalid API key"


@dataclass(frozen=True)
class Caller:
    """A resolved API key: exactly one of ``consumer`` and ``test_version`` is set."""

    tenant_id: uuid.UUID
    consumer: Consumer | None = None
    test_version: EngineVersion | None = None


def resolve(session: Session, *, api_key: str | None) -> Caller:
    """The caller behind an API key; Unauthorized when it is missing, unknown or inactive."""
    if not api_key or len(api_key) > 200:
        raise Unauthorized(INVALID_API_KEY)
    key_hash = digest(api_key)
    consumer = consumer_repo.get_by_key_hash(session, key_hash=key_hash)
    if consumer is not None:
        if not consumer.is_active or consumer.is_archived:
            raise Unauthorized(INVALID_API_KEY)
        consumer_repo.touch(session, consumer=consumer)
        return Caller(tenant_id=consumer.tenant_id, consumer=consumer)
    version = engine_repo.get_version_by_test_key(session, key_hash=key_hash)
    if version is not None:
        return Caller(tenant_id=version.tenant_id, test_version=version)
    raise Unauthorized(INVALID_API_KEY)
