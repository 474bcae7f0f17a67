"""Engines, their versions and per-consumer access records."""

from __future__ import annotations

import uuid

from sqlalchemy import and_, bindparam, delete, select, update
from sqlalchemy.orm import Session, defer

from shared.db.models import Consumer, Engine, EngineAccess, EngineVersion, Tenant
from shared.db.types import utcnow


# The lookups every consumer request makes, built once: a statement object is compiled and its
# cache key found once, where a new select() per call pays for both every time (2-4x the cost).
_ENGINE = select(Engine).where(Engine.tenant_id == bindparam("tenant_id"), Engine.id == bindparam("engine_id"))
# The consumer API's read (execute, about, batches): the engine a consumer URL names with its
# active version, and the consumer whose key the caller sent with its access record for that
# engine, in one statement, not three (a key matching no consumer, or none sent, leaves those two
# empty). The version without its fidelity report and document storage, JSON that no consumer
# request reads and that grows with the workbook (deferred, as for the worker's read below).
_ENGINE_VERSION_AND_KEY_BY_SLUGS = (
    select(Engine, EngineVersion, Consumer, EngineAccess).select_from(Engine).join(Tenant, Tenant.id == Engine.tenant_id)
    .outerjoin(EngineVersion, and_(EngineVersion.id == Engine.active_version_id, EngineVersion.tenant_id == Engine.tenant_id))
    .outerjoin(Consumer, Consumer.api_key_hash == bindparam("key_hash"))
    .outerjoin(EngineAccess, and_(
        EngineAccess.consumer_id == Consumer.id, EngineAccess.tenant_id == Consumer.tenant_id, EngineAccess.engine_id == Engine.id,
    ))
    .where(Tenant.slug == bindparam("tenant_slug"), Engine.slug == bindparam("engine_slug"))
    .options(defer(EngineVersion.fidelity_report), defer(EngineVersion.document_storage))
)
_VERSION = select(EngineVersion).where(EngineVersion.tenant_id == bindparam("tenant_id"), EngineVersion.id == bindparam("version_id"))
_VERSION_BY_TEST_KEY = select(EngineVersion).where(EngineVersion.test_key_hash == bindparam("key_hash"))
_ACCESS = select(EngineAccess).where(
    EngineAccess.tenant_id == bindparam("tenant_id"),
    EngineAccess.engine_id == bindparam("engine_id"),
    EngineAccess.consumer_id == bindparam("consumer_id"),
)


def get_engine(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID) -> Engine | None:
    """An engine of this tenant."""
    return session.scalar(_ENGINE, {"tenant_id": tenant_id, "engine_id": engine_id})


def lock_engine(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID) -> Engine | None:
    """An engine of this tenant, its row locked until the transaction ends (FOR UPDATE where supported).

    Activating and deleting versions take this lock first, so they run one at a time per engine.
    """
    return session.scalar(
        select(Engine)
        .where(Engine.tenant_id == tenant_id, Engine.id == engine_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )


def delete_engine(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID) -> None:
    """Remove an engine with its access records and versions (jobs are not touched)."""
    for model in (EngineAccess, EngineVersion):
        session.execute(
            delete(model).where(model.tenant_id == tenant_id, model.engine_id == engine_id).execution_options(synchronize_session=False)
        )
    session.execute(delete(Engine).where(Engine.tenant_id == tenant_id, Engine.id == engine_id).execution_options(synchronize_session=False))


def delete_version(session: Session, *, tenant_id: uuid.UUID, version_id: uuid.UUID) -> None:
    """Remove one version row."""
    session.execute(
        delete(EngineVersion)
        .where(EngineVersion.tenant_id == tenant_id, EngineVersion.id == version_id)
        .execution_options(synchronize_session=False)
    )


def get_engine_version_and_key_by_slugs(
    session: Session, *, tenant_slug: str, engine_slug: str, key_hash: str | None
) -> tuple[Engine, EngineVersion | None, Consumer | None, EngineAccess | None] | None:
    """The engine addressed by a consumer URL, its active version (None without one), the consumer
    whose API key hashes to ``key_hash`` (None: no such consumer, or no hash) and that consumer's
    access record for the engine (None without one), read together; None when there is no such engine."""
    row = session.execute(_ENGINE_VERSION_AND_KEY_BY_SLUGS,
                          {"tenant_slug": tenant_slug, "engine_slug": engine_slug, "key_hash": key_hash}).first()
    return (row[0], row[1], row[2], row[3]) if row is not None else None


def get_engine_by_slug(session: Session, *, tenant_id: uuid.UUID, slug: str) -> Engine | None:
    """An engine of this tenant by slug."""
    return session.scalar(select(Engine).where(Engine.tenant_id == tenant_id, Engine.slug == slug))


def list_engines(session: Session, *, tenant_id: uuid.UUID) -> list[Engine]:
    """The tenant's engines, by name."""
    return list(session.scalars(select(Engine).where(Engine.tenant_id == tenant_id).order_by(Engine.name, Engine.created_at)))


def get_version(session: Session, *, tenant_id: uuid.UUID, version_id: uuid.UUID) -> EngineVersion | None:
    """A version of one of this tenant's engines."""
    return session.scalar(_VERSION, {"tenant_id": tenant_id, "version_id": version_id})


def get_version_any_tenant(session: Session, *, version_id: uuid.UUID) -> EngineVersion | None:
    """A version by id alone (the worker, which holds a job that names it)."""
    return session.get(EngineVersion, version_id)


# The worker's read of a job's version: what a calculation needs, without the fidelity report and
# the document storage (JSON parsed for every batch, never read by a calculation; deferred, so an
# access after the session has closed raises rather than answers None).
_VERSION_TO_CALCULATE = (
    select(EngineVersion)
    .where(EngineVersion.id == bindparam("version_id"))
    .options(defer(EngineVersion.fidelity_report), defer(EngineVersion.document_storage), defer(EngineVersion.cost))
)


def get_version_to_calculate(session: Session, *, version_id: uuid.UUID) -> EngineVersion | None:
    """A version by id alone, for calculating its jobs (the worker)."""
    return session.scalar(_VERSION_TO_CALCULATE, {"version_id": version_id})


def get_version_by_test_key(session: Session, *, key_hash: str) -> EngineVersion | None:
    """The version whose test key hashes to ``key_hash``."""
    return session.scalar(_VERSION_BY_TEST_KEY, {"key_hash": key_hash})


def list_versions(session: Session, *, tenant_id: uuid.UUID, engine_ids: list[uuid.UUID]) -> list[EngineVersion]:
    """Versions of the given engines, oldest first."""
    if not engine_ids:
        return []
    return list(
        session.scalars(
            select(EngineVersion)
            .where(EngineVersion.tenant_id == tenant_id, EngineVersion.engine_id.in_(engine_ids))
            .order_by(EngineVersion.created_at)
        )
    )


def version_exists(session: Session, *, engine_id: uuid.UUID, version: str) -> bool:
    """Whether the engine already has this version string."""
    return session.scalar(select(EngineVersion.id).where(EngineVersion.engine_id == engine_id, EngineVersion.version == version)) is not None


def set_active_version(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, version_id: uuid.UUID) -> None:
    """Point the engine at ``version_id``; one UPDATE, so there is never a second active version."""
    session.execute(
        update(Engine)
        .where(Engine.tenant_id == tenant_id, Engine.id == engine_id)
        .values(active_version_id=version_id, updated_at=utcnow())
    )


def get_access(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, consumer_id: uuid.UUID) -> EngineAccess | None:
    """One consumer's access record for one engine."""
    return session.scalar(_ACCESS, {"tenant_id": tenant_id, "engine_id": engine_id, "consumer_id": consumer_id})


def delete_access(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, consumer_id: uuid.UUID) -> bool:
    """Remove one consumer's access record for one engine; False when there was none."""
    result = session.execute(
        delete(EngineAccess)
        .where(EngineAccess.tenant_id == tenant_id, EngineAccess.engine_id == engine_id, EngineAccess.consumer_id == consumer_id)
        .execution_options(synchronize_session=False)
    )
    return result.rowcount > 0


def list_access_for_consumer(session: Session, *, tenant_id: uuid.UUID, consumer_id: uuid.UUID) -> list[tuple[EngineAccess, Engine, EngineVersion | None]]:
    """A consumer's access records with their engines and the engines' active versions, by engine name."""
    rows = session.execute(
        select(EngineAccess, Engine, EngineVersion)
        .join(Engine, Engine.id == EngineAccess.engine_id)
        .outerjoin(EngineVersion, EngineVersion.id == Engine.active_version_id)
        .where(EngineAccess.tenant_id == tenant_id, EngineAccess.consumer_id == consumer_id, Engine.tenant_id == tenant_id)
        .order_by(Engine.name, Engine.created_at)
    )
    return [(a, e, v) for a, e, v in rows]


def list_access_for_engines(session: Session, *, tenant_id: uuid.UUID, engine_ids: list[uuid.UUID]) -> list[tuple[EngineAccess, Consumer]]:
    """Access records of these engines with their (non-archived) consumers."""
    if not engine_ids:
        return []
    rows = session.execute(
        select(EngineAccess, Consumer)
        .join(Consumer, Consumer.id == EngineAccess.consumer_id)
        .where(
            EngineAccess.tenant_id == tenant_id,
            EngineAccess.engine_id.in_(engine_ids),
            Consumer.is_archived.is_(False),
        )
        .order_by(Consumer.name)
    )
    return [(a, c) for a, c in rows]


def background_work_of_versions(session: Session, *, created_before) -> list[tuple[uuid.UUID, dict | None, dict | None]]:
    """(id, fidelity report, document storage) of every version created before ``created_before``:
    what the sweeper reads to find version checks that never ran."""
    rows = session.execute(
        select(EngineVersion.id, EngineVersion.fidelity_report, EngineVersion.document_storage)
        .where(EngineVersion.created_at < created_before)
        .order_by(EngineVersion.created_at)
    )
    return [tuple(row) for row in rows]
