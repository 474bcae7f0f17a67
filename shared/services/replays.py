"""Shadow replays, the administrator's side: ask for one, follow it, read its report.

A replay takes the inputs of the last ``count`` completed production jobs (made by consumers,
not test keys) of the engine's active version, chosen once when it is asked for, and calculates
them on a candidate version in a worker (``shared.services.replay_runner``); the report says how
many outputs are identical, within tolerance or changed (``shared.services.replay_report``).

Tolerance per output: the engine's test cases' where one names that output (the most recently
changed case's), else the request's ``tolerance`` (default exact). Both are recorded with the
replay when it is asked for, so its report says what it was judged by.

A replay makes no job rows; one engine has at most one replay unfinished at a time. A replay
whose message was lost (a queue outage) is queued again when it is read and has not moved for
the lease (``processing_lease_seconds``).
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from shared.adapters import queues
from shared.config import get_settings
from shared.db.models import Replay, ReplayStatus, TestCase
from shared.db.types import utcnow
from shared.errors import Conflict, Invalid, NotFound, SheetcalcError
from shared.repositories import replays as repo
from shared.services import engines as engine_service
from shared.services import versions
from shared.services.output_compare import Tolerance
from shared.services.replay_report import Accumulator, summary, tolerance_dict

log = logging.getLogger(__name__)

MIN_COUNT, MAX_COUNT, DEFAULT_COUNT = 1, 10_000, 1_000
REPLAY_NOT_FOUND = "Replay not found"
NO_ACTIVE = "The engine has no active version: there are no production jobs to replay"
ALREADY_RUNNING = "A replay of this engine is already running; wait for it to finish"
COUNT_RANGE = f"count must be between {MIN_COUNT:,} and {MAX_COUNT:,}"


def test_case_tolerances(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID) -> dict[str, Tolerance]:
    """Each output's tolerance as the engine's enabled test cases set it (the most recently
    changed case that names the output)."""
    found: dict[str, Tolerance] = {}
    cases = session.scalars(
        select(TestCase).where(TestCase.tenant_id == tenant_id, TestCase.engine_id == engine_id, TestCase.enabled.is_(True))
        .order_by(TestCase.updated_at.desc())
    )
    for case in cases:
        for name, bound in (case.tolerances or {}).items():
            if name not in found and isinstance(bound, dict):
                found[name] = Tolerance(absolute=bound.get("absolute"), relative=bound.get("relative"))
    return found


def create(
    session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, version_id: uuid.UUID,
    count: int = DEFAULT_COUNT, tolerance: Tolerance | None = None,
) -> Replay:
    """Choose the jobs to replay and queue the replay on the candidate version's lane."""
    if not MIN_COUNT <= count <= MAX_COUNT:
        raise Invalid(COUNT_RANGE)
    candidate = versions.get(session, tenant_id=tenant_id, engine_id=engine_id, version_id=version_id)
    engine = engine_service.get(session, tenant_id=tenant_id, engine_id=engine_id)
    if engine.active_version_id is None:
        raise Invalid(NO_ACTIVE)
    baseline = versions.get(session, tenant_id=tenant_id, engine_id=engine_id, version_id=engine.active_version_id)
    if repo.unfinished_for_engine(session, tenant_id=tenant_id, engine_id=engine_id) is not None:
        raise Conflict(ALREADY_RUNNING)
    job_ids = repo.recent_production_job_ids(session, tenant_id=tenant_id, engine_id=engine_id, version_id=baseline.id, limit=count)
    per_output = test_case_tolerances(session, tenant_id=tenant_id, engine_id=engine_id)
    now = utcnow()
    replay = repo.add(session, Replay(
        id=uuid.uuid4(), tenant_id=tenant_id, engine_id=engine_id, version_id=candidate.id,
        baseline_version_id=baseline.id, baseline_version=baseline.version, requested=count, total=len(job_ids), processed=0,
        status=ReplayStatus.QUEUED if job_ids else ReplayStatus.COMPLETED,
        tolerance={"default": tolerance_dict(tolerance or Tolerance()), "outputs": {n: tolerance_dict(t) for n, t in per_output.items()}},
        job_ids=[str(j) for j in job_ids], created_at=now, updated_at=now,
        report=None if job_ids else Accumulator(tolerances=per_output, default=tolerance or Tolerance()).report(),
        completed_at=None if job_ids else now,
    ))
    session.commit()
    if job_ids:
        _queue(replay, lane=candidate.lane)
    return replay


def _queue(replay: Replay, *, lane: str) -> None:
    try:
        queues.enqueue_replay(replay.id, tenant_id=replay.tenant_id, lane=lane)
    except SheetcalcError:
        # Stored: reading it later queues it again (``get``).
        log.exception("could not queue replay %s", replay.id)


def get(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, version_id: uuid.UUID, replay_id: uuid.UUID) -> Replay:
    """A replay of this tenant's version; queued again when it stalled (its message was lost)."""
    version = versions.get(session, tenant_id=tenant_id, engine_id=engine_id, version_id=version_id)
    replay = repo.get(session, tenant_id=tenant_id, replay_id=replay_id)
    if replay is None or replay.version_id != version_id:
        raise NotFound(REPLAY_NOT_FOUND)
    lease = timedelta(seconds=get_settings().processing_lease_seconds)
    if replay.status in repo.UNFINISHED and replay.updated_at < utcnow() - lease:
        replay.updated_at = utcnow()  # one message per lease, however often it is read
        session.commit()
        _queue(replay, lane=version.lane)
    return replay


def list_for_version(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, version_id: uuid.UUID) -> list[Replay]:
    """The version's replays, newest first (the last 50)."""
    versions.get(session, tenant_id=tenant_id, engine_id=engine_id, version_id=version_id)
    return repo.list_for_version(session, tenant_id=tenant_id, version_id=version_id)


def latest_summary(session: Session, *, tenant_id: uuid.UUID, version_id: uuid.UUID) -> dict[str, Any] | None:
    """The counts of the version's latest completed replay (what a release records), or None:
    replay_id, baseline_version, total, identical, within, changed, failed, completed_at."""
    replay = repo.latest_completed(session, tenant_id=tenant_id, version_id=version_id)
    if replay is None:
        return None
    return {"replay_id": str(replay.id), "baseline_version": replay.baseline_version, **summary(replay.report),
            "completed_at": replay.completed_at.isoformat() if replay.completed_at else None}
