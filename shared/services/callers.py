"""Who is calling the consumer API: a consumer's key or a version's test key, from an address."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy.orm import Session

from shared.db.models import Consumer, Engine, EngineVersion
from shared.errors import Unauthorized
from shared.repositories import consumers as consumer_repo
from shared.repositories import engines as engine_repo
from shared.security import digest
from shared.services import ip_policy

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


@dataclass(frozen=True)
class ConsumerRequest:
    """What a consumer API call presents: its key (unchecked) and its address.

    Nothing is checked on construction: the services check the engine's IP whitelist first and
    the key after (``admit``, then ``resolve``), so an unlisted address learns nothing about keys.
    """

    api_key: str | None
    client_ip: str | None

    def admit(self, engine: Engine | None) -> None:
        """Refuse the address when the engine's whitelist is on and does not list it."""
        ip_policy.enforce(engine, self.client_ip)

    def resolve(self, session: Session) -> Caller:
        """The caller behind the key; Unauthorized when it is missing, unknown or inactive."""
        return resolve(session, api_key=self.api_key)
