"""Engines: creation, listing, the detail view, settings and deletion."""

from __future__ import annotations

import logging
import re
import unicodedata
import uuid
from dataclasses import dataclass, field
from typing import TypedDict, Unpack

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from shared.adapters.storage import engine_prefix, get_store
from shared.db.models import Consumer, Engine, EngineAccess, EngineVersion, TestRun
from shared.errors import Conflict, NotFound, ServiceUnavailable
from shared.repositories import engines as repo
from shared.repositories import test_cases as test_case_repo
from shared.services import ip_policy

log = logging.getLogger(__name__)

ENGINE_NOT_FOUND = "Engine not found"


def _slug_taken(slug: str) -> Conflict:
    return Conflict(f"An engine with slug '{slug}' already exists")


def slugify(name: str) -> str:
    """A URL slug from a display name: lower-case ASCII letters, digits and dashes."""
    text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().lower()
    slug = re.sub(r"[^a-z0-9]+", "-", text).strip("-")[:100].strip("-")
    return slug or "engine"


@dataclass
class EngineView:
    """An engine with its versions and access records, as management screens show it."""

    engine: Engine
    versions: list[EngineVersion] = field(default_factory=list)
    access: list[tuple[EngineAccess, Consumer]] = field(default_factory=list)
    test_runs: dict[uuid.UUID, TestRun] = field(default_factory=dict)  # each version's latest

    @property
    def active_version(self) -> EngineVersion | None:
        return next((v for v in self.versions if v.id == self.engine.active_version_id), None)


def create(session: Session, *, tenant_id: uuid.UUID, name: str, slug: str | None, description: str | None) -> EngineView:
    """Create an engine; the slug is generated from the name when omitted and unique per tenant."""
    if slug is None:
        base = slugify(name)
        slug, n = base, 2
        while repo.get_engine_by_slug(session, tenant_id=tenant_id, slug=slug):
            suffix = f"-{n}"
            slug, n = base[: 100 - len(suffix)] + suffix, n + 1
    elif repo.get_engine_by_slug(session, tenant_id=tenant_id, slug=slug):
        raise _slug_taken(slug)
    engine = Engine(tenant_id=tenant_id, name=name, slug=slug, description=description, ip_whitelist=[])
    session.add(engine)
    try:
        session.flush()
    except IntegrityError as exc:
        raise _slug_taken(slug) from exc
    return EngineView(engine=engine)


def get(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID) -> Engine:
    """An engine of this tenant; NotFound otherwise."""
    engine = repo.get_engine(session, tenant_id=tenant_id, engine_id=engine_id)
    if engine is None:
        raise NotFound(ENGINE_NOT_FOUND)
    return engine


def get_view(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID) -> EngineView:
    """An engine with all its versions and consumers."""
    engine = get(session, tenant_id=tenant_id, engine_id=engine_id)
    versions = repo.list_versions(session, tenant_id=tenant_id, engine_ids=[engine.id])
    return EngineView(
        engine=engine,
        versions=versions,
        access=repo.list_access_for_engines(session, tenant_id=tenant_id, engine_ids=[engine.id]),
        test_runs=test_case_repo.latest_runs(session, tenant_id=tenant_id, version_ids=[v.id for v in versions]),
    )


def list_views(session: Session, *, tenant_id: uuid.UUID) -> list[EngineView]:
    """The tenant's engines, each with its versions (two queries, whatever the count)."""
    engines = repo.list_engines(session, tenant_id=tenant_id)
    versions = repo.list_versions(session, tenant_id=tenant_id, engine_ids=[e.id for e in engines])
    by_engine: dict[uuid.UUID, list[EngineVersion]] = {}
    for v in versions:
        by_engine.setdefault(v.engine_id, []).append(v)
    return [EngineView(engine=e, versions=by_engine.get(e.id, [])) for e in engines]


class EngineChanges(TypedDict, total=False):
    """The settings an update may change; a key left out keeps its value (PATCH semantics)."""

    name: str
    slug: str
    description: str | None
    ip_whitelist_enabled: bool
    ip_whitelist: list[str] | None


def update(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, **changes: Unpack[EngineChanges]) -> EngineView:
    """Change the given settings (name, slug, description, IP whitelist); a slug in use is a Conflict."""
    unknown = changes.keys() - EngineChanges.__annotations__.keys()
    if unknown:
        raise TypeError(f"not an engine setting: {', '.join(sorted(unknown))}")
    engine = get(session, tenant_id=tenant_id, engine_id=engine_id)
    slug = changes.get("slug")
    if slug is not None and slug != engine.slug and repo.get_engine_by_slug(session, tenant_id=tenant_id, slug=slug):
        raise _slug_taken(slug)
    if "ip_whitelist" in changes:
        entries = [ip_policy.normalise_entry(e) for e in changes["ip_whitelist"] or []]
        changes["ip_whitelist"] = list(dict.fromkeys(entries))
    for name, value in changes.items():
        setattr(engine, name, value)
    try:
        session.flush()
    except IntegrityError as exc:
        raise _slug_taken(slug or engine.slug) from exc
    return get_view(session, tenant_id=tenant_id, engine_id=engine_id)


def remove_stored_files(prefix: str) -> None:
    """Delete stored objects under ``prefix``, after their rows are gone; a failure only leaves orphans."""
    try:
        get_store().delete_prefix(prefix)
    except ServiceUnavailable:
        log.exception("could not delete stored files under %s; they are orphaned", prefix)


def delete(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID) -> Engine:
    """Remove the engine, its versions, its access records and its stored workbooks; jobs stay."""
    engine = repo.lock_engine(session, tenant_id=tenant_id, engine_id=engine_id)
    if engine is None:
        raise NotFound(ENGINE_NOT_FOUND)
    repo.delete_engine(session, tenant_id=tenant_id, engine_id=engine_id)
    # Rows first: stored files without rows harm nobody, rows without their files break the engine.
    session.commit()
    remove_stored_files(engine_prefix(tenant_id, engine_id))
    return engine
