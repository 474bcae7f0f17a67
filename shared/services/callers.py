"""Who is calling the consumer API: a consumer's key or a version's test key, from an address."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from sqlalchemy.orm import Session

from shared.db.models import Consumer, Engine, EngineAccess, EngineVersion
from shared.errors import Unauthorized
from shared.repositories import consumers as consumer_repo
from shared.repositories import engines as engine_repo
from shared.security import digest
from shared.services import ip_policy, rate_limits
from shared.services.rate_limits import Allowance

INVALID_API_KEY = "Invalid API key"


@dataclass(frozen=True)
class Caller:
    """A resolved API key: exactly one of ``consumer`` and ``test_version`` is set."""

    tenant_id: uuid.UUID
    consumer: Consumer | None = None
    test_version: EngineVersion | None = None
    # The consumer's access record for the engine its request names, read with the key
    # (``access_engine_id`` says which engine; None: not read).
    access: EngineAccess | None = None
    access_engine_id: uuid.UUID | None = None

    def known_access(self, engine_id: uuid.UUID) -> tuple[bool, EngineAccess | None]:
        """Whether the consumer's access record for ``engine_id`` was read with the key, and it."""
        return (self.access_engine_id is not None and self.access_engine_id == engine_id), self.access

    @property
    def rate_key(self) -> str:
        """What the rate limit counts under: the consumer, or the version whose test key it is."""
        return f"consumer:{self.consumer.id}" if self.consumer is not None else f"test-key:{self.test_version.id}"


def key_hash(api_key: str | None) -> str | None:
    """What an API key is looked up by (its digest); None for a key that cannot be one (missing
    or longer than any key), which ``resolve`` refuses."""
    if not api_key or len(api_key) > 200:
        return None
    return digest(api_key)


def resolve(session: Session, *, hashed: str | None, engine_id: uuid.UUID | None = None,
            read: tuple[Consumer | None, EngineAccess | None] | None = None) -> Caller:
    """The caller behind an API key, given as its ``key_hash`` (None: missing or impossible);
    Unauthorized when it is missing, unknown or inactive. With ``engine_id``, a consumer's access
    record for that engine is read in the same statement; with ``read`` too, both were read
    already (the consumer whose key hashes so, None when none does, and its access to
    ``engine_id``) and are not read again."""
    if hashed is None:
        raise Unauthorized(INVALID_API_KEY)
    access = None
    if engine_id is None:
        consumer = consumer_repo.get_by_key_hash(session, key_hash=hashed)
    elif read is not None:
        consumer, access = read
    else:
        consumer, access = consumer_repo.get_by_key_hash_with_access(session, key_hash=hashed, engine_id=engine_id)
    if consumer is not None:
        if not consumer.is_active or consumer.is_archived:
            raise Unauthorized(INVALID_API_KEY)
        consumer_repo.touch(session, consumer=consumer)
        return Caller(tenant_id=consumer.tenant_id, consumer=consumer, access=access, access_engine_id=engine_id)
    version = engine_repo.get_version_by_test_key(session, key_hash=hashed)
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
    # Told where the key stands against its rate limit once it is counted (the HTTP edge shows it).
    report_allowance: Callable[[Allowance], None] | None = None

    def admit(self, engine: Engine | None) -> None:
        """Refuse the address when the engine's whitelist is on and does not list it."""
        ip_policy.enforce(engine, self.client_ip)

    @cached_property
    def key_hash(self) -> str | None:
        """What the key is looked up by (None: no key that can be one; ``resolve`` refuses it),
        worked out once per request (an execute looks the key up with the engine, then resolves it)."""
        return key_hash(self.api_key)

    def resolve(self, session: Session, engine_id: uuid.UUID | None = None,
                read: tuple[Consumer | None, EngineAccess | None] | None = None) -> Caller:
        """The caller behind the key, counted against its rate limit; Unauthorized when the key is
        missing, unknown or inactive, TooManyRequests when it has used up its window. With
        ``engine_id`` (the engine the request names), a consumer's access to it comes along (or
        is ``read`` already with the engine: see ``resolve``)."""
        caller = resolve(session, hashed=self.key_hash, engine_id=engine_id, read=read)
        allowance = rate_limits.count_request(session, key=caller.rate_key)
        if allowance is not None and self.report_allowance is not None:
            self.report_allowance(allowance)
        rate_limits.enforce(allowance)
        return caller
