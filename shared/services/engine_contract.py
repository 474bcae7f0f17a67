"""The contract of one engine for its consumers: the schemas its execute, poll and download calls
carry, for `GET /jobs/openapi/{tenant_slug}/{engine_slug}` (the document is shaped by
shared/api/presenters/engine_contract.py).

Who may read it is the about call's rule (whitelist first, then the key, then
`can_view_about`), with its answers. The schemas are the active version's; a version without a
declared schema gets one from its named ranges' stored shapes (schema_suggestion.shapes_only).
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from shared.calc.schema_suggestion import shapes_only
from shared.db.models import Engine, EngineVersion
from shared.errors import BadRequest
from shared.repositories import engines as engine_repo
from shared.repositories import tenants as tenant_repo
from shared.services import engines, jobs
from shared.services.callers import ConsumerRequest


@dataclass(frozen=True)
class Contract:
    """An engine's active version and the schemas of its inputs and outputs."""

    engine: Engine
    version: EngineVersion
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    declared: bool  # True when the version declares its input schema, False when derived


def _schema(declared: dict[str, Any] | None, version: EngineVersion, kind: str) -> dict[str, Any]:
    if isinstance(declared, dict) and declared:
        return copy.deepcopy(declared)
    return shapes_only(version.named_ranges or [], kind)


def _contract(engine: Engine, version: EngineVersion) -> Contract:
    return Contract(
        engine=engine, version=version,
        input_schema=_schema(version.input_schema, version, "input"),
        output_schema=_schema(version.output_schema, version, "output"),
        declared=bool(version.input_schema),
    )


def for_consumer(session: Session, *, request: ConsumerRequest, tenant_slug: str, engine_slug: str) -> Contract:
    """The engine's contract, for a consumer allowed to view its about page."""
    engine, version = jobs.about(session, request=request, tenant_slug=tenant_slug, engine_slug=engine_slug)
    return _contract(engine, version)


def for_administrator(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID) -> tuple[Contract, str]:
    """The same contract for a signed-in administrator of the engine's tenant (the console's
    download), and the tenant's slug its paths carry. NotFound for another tenant's engine;
    BadRequest, as for a consumer, when the engine has no active version."""
    engine = engines.get(session, tenant_id=tenant_id, engine_id=engine_id)
    version = engine_repo.get_version(session, tenant_id=tenant_id, version_id=engine.active_version_id) if engine.active_version_id else None
    if version is None:
        raise BadRequest(jobs.NO_ACTIVE_VERSION)
    return _contract(engine, version), tenant_repo.get_tenant(session, tenant_id=tenant_id).slug
