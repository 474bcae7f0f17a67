"""Activating a version through the release gate, and the release history it leaves.

The gate asks two things of a version before it becomes the engine's active one: that its test
run passed (when the engine has enabled test cases: ``test_runs.gate_reasons``), and that no
named output depends on a function no engine implements (the fidelity check's
``version_checks.unimplemented_outputs``). An engine with neither activates as it always did.
A refusal is a 409 naming its reasons; an administrator may activate anyway by giving a reason,
which the release records with the reasons it overrode. Every activation records a release: who,
when, the version it replaced, the test run's summary (and a shadow replay's, when there is one).
A rollback is the activation of the previous version, through the same gate.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from shared.db.models import EngineVersion, Release, User
from shared.errors import ActivationRefused, Invalid, NotFound
from shared.repositories import engines as engine_repo
from shared.repositories import releases as repo
from shared.repositories import test_cases as case_repo
from shared.services import engines, replays, test_runs, version_checks, versions

REFUSED = "The release gate refused to activate this version; activate it with an override_reason to go ahead anyway"
MAX_OVERRIDE_REASON = 2000


@dataclass
class Activation:
    """A version made active, and the release recorded (None when it was active already)."""

    version: EngineVersion
    release: Release | None


def unimplemented_reasons(session: Session, *, version: EngineVersion) -> list[dict[str, str]]:
    """The gate's reason when named outputs depend on a function no engine implements."""
    found = version_checks.unimplemented_outputs(session, tenant_id=version.tenant_id, version=version)
    if not found:
        return []
    names = sorted({_output_name(item) for item in found})
    return [{"code": "unimplemented_outputs",
             "message": f"Outputs depend on a function no calculation engine implements: {', '.join(names)}"}]


def _output_name(item: Any) -> str:
    if isinstance(item, dict):
        name = item.get("output") or item.get("name") or "?"
        return f"{name} ({item['function']})" if item.get("function") else str(name)
    return str(item)


def gate_reasons(session: Session, *, version: EngineVersion) -> list[dict[str, str]]:
    """Every reason the gate refuses the version; empty when it may be activated."""
    return test_runs.gate_reasons(session, version=version) + unimplemented_reasons(session, version=version)


def _replay_summary(session: Session, *, version: EngineVersion) -> dict[str, Any] | None:
    """The latest completed shadow replay of the version, summarised for its release."""
    return replays.latest_summary(session, tenant_id=version.tenant_id, version_id=version.id)


def activate(
    session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, version_id: uuid.UUID,
    user: User | None, override_reason: str | None = None,
) -> Activation:
    """Make the version active if the gate allows it or an override reason is given, and record
    the release; ActivationRefused (409) with the gate's reasons otherwise."""
    engine = engine_repo.lock_engine(session, tenant_id=tenant_id, engine_id=engine_id)
    if engine is None:
        raise NotFound(engines.ENGINE_NOT_FOUND)
    version = versions.get(session, tenant_id=tenant_id, engine_id=engine_id, version_id=version_id)
    if engine.active_version_id == version.id:
        return Activation(version=version, release=None)  # nothing changes, nothing to gate or record
    reason = (override_reason or "").strip() or None
    if reason is not None and len(reason) > MAX_OVERRIDE_REASON:
        raise Invalid(f"override_reason is at most {MAX_OVERRIDE_REASON} characters")
    reasons = gate_reasons(session, version=version)
    if reasons and reason is None:
        raise ActivationRefused(REFUSED, reasons=reasons)
    previous_id = engine.active_version_id
    previous = engine_repo.get_version(session, tenant_id=tenant_id, version_id=previous_id) if previous_id else None
    versions.activate(session, tenant_id=tenant_id, engine_id=engine_id, version_id=version.id)
    release = repo.add(session, Release(
        tenant_id=tenant_id, engine_id=engine_id, version_id=version.id, version=version.version,
        previous_version_id=previous_id, previous_version=previous.version if previous else None,
        activated_by=user.id if user else None, activated_by_email=user.email if user else None,
        test_run_summary=test_runs.summary(case_repo.latest_run(session, tenant_id=tenant_id, version_id=version.id)),
        replay_summary=_replay_summary(session, version=version),
        gate_reasons=reasons if reasons else None, override_reason=reason if reasons else None,
    ))
    return Activation(version=version, release=release)


def verdict(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, version_id: uuid.UUID) -> list[dict[str, str]]:
    """What the gate would say now about activating the version (the console's activation dialog)."""
    version = versions.get(session, tenant_id=tenant_id, engine_id=engine_id, version_id=version_id)
    return gate_reasons(session, version=version)


def list_for_engine(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, limit: int = 50, offset: int = 0) -> list[Release]:
    """The engine's release history, newest first."""
    engines.get(session, tenant_id=tenant_id, engine_id=engine_id)
    return repo.list_for_engine(session, tenant_id=tenant_id, engine_id=engine_id, limit=limit, offset=offset)
