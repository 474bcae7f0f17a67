"""Shadow replays: their rows, the recorded jobs they replay, and their conditional claims."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from shared.db.models import Job, JobStatus, Replay, ReplayStatus
from shared.db.types import utcnow

UNFINISHED = (ReplayStatus.QUEUED, ReplayStatus.RUNNING)


def add(session: Session, replay: Replay) -> Replay:
    session.add(replay)
    session.flush()
    return replay


def get(session: Session, *, tenant_id: uuid.UUID, replay_id: uuid.UUID) -> Replay | None:
    """A replay of the tenant's."""
    return session.scalar(select(Replay).where(Replay.id == replay_id, Replay.tenant_id == tenant_id))


def get_by_id(session: Session, *, replay_id: uuid.UUID) -> Replay | None:
    """A replay by id alone (the worker, which holds only the id)."""
    return session.get(Replay, replay_id)


def list_for_version(session: Session, *, tenant_id: uuid.UUID, version_id: uuid.UUID, limit: int = 50) -> list[Replay]:
    """The version's replays, newest first."""
    return list(session.scalars(
        select(Replay).where(Replay.tenant_id == tenant_id, Replay.version_id == version_id)
        .order_by(Replay.created_at.desc()).limit(limit)
    ))


def latest_completed(session: Session, *, tenant_id: uuid.UUID, version_id: uuid.UUID) -> Replay | None:
    return session.scalar(
        select(Replay).where(Replay.tenant_id == tenant_id, Replay.version_id == version_id, Replay.status == ReplayStatus.COMPLETED)
        .order_by(Replay.completed_at.desc()).limit(1)
    )


def unfinished_for_engine(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID) -> Replay | None:
    return session.scalar(
        select(Replay).where(Replay.tenant_id == tenant_id, Replay.engine_id == engine_id, Replay.status.in_(UNFINISHED)).limit(1)
    )


def recent_production_job_ids(
    session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, version_id: uuid.UUID, limit: int
) -> list[uuid.UUID]:
    """The ids of the version's last ``limit`` completed jobs made by consumers (not test keys),
    newest first (ix_jobs_engine_created)."""
    return list(session.scalars(
        select(Job.id)
        .where(Job.tenant_id == tenant_id, Job.engine_id == engine_id, Job.version_id == version_id,
               Job.status == JobStatus.COMPLETED, Job.is_test.is_(False))
        .order_by(Job.created_at.desc(), Job.id.desc()).limit(limit)
    ))


def jobs_by_ids(session: Session, *, tenant_id: uuid.UUID, job_ids: list[uuid.UUID]) -> list[Job]:
    """The jobs among ``job_ids`` still stored, in ``job_ids``' order, detached from the session."""
    if not job_ids:
        return []
    rows = {job.id: job for job in session.scalars(select(Job).where(Job.id.in_(job_ids), Job.tenant_id == tenant_id))}
    for job in rows.values():
        session.expunge(job)
    return [rows[job_id] for job_id in job_ids if job_id in rows]


def claim(session: Session, *, replay_id: uuid.UUID, lease_seconds: int) -> datetime | None:
    """Take an unfinished replay not held by a live claim; the claim's time, or None if not ours."""
    now = utcnow()
    stale = now - timedelta(seconds=lease_seconds)
    result = session.execute(
        update(Replay)
        .where(Replay.id == replay_id, Replay.status.in_(UNFINISHED), or_(Replay.claimed_at.is_(None), Replay.claimed_at < stale))
        .values(status=ReplayStatus.RUNNING, claimed_at=now, updated_at=now)
        .execution_options(synchronize_session=False)
    )
    return now if result.rowcount == 1 else None


def _held(replay_id: uuid.UUID, claimed_at: datetime):
    return update(Replay).where(Replay.id == replay_id, Replay.claimed_at == claimed_at, Replay.status == ReplayStatus.RUNNING)


def progress(session: Session, *, replay_id: uuid.UUID, claimed_at: datetime, processed: int) -> bool:
    """Record how many cases were compared (the claim renewed); False when the claim was lost."""
    now = utcnow()
    result = session.execute(
        _held(replay_id, claimed_at).values(processed=processed, updated_at=now).execution_options(synchronize_session=False)
    )
    return result.rowcount == 1


def hand_on(session: Session, *, replay_id: uuid.UUID, claimed_at: datetime, processed: int, state: dict) -> bool:
    """Keep what was compared and let the claim go, for the next message to go on from there."""
    result = session.execute(
        _held(replay_id, claimed_at).values(processed=processed, state=state, claimed_at=None, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    return result.rowcount == 1


def finish(session: Session, *, replay_id: uuid.UUID, claimed_at: datetime, processed: int, report: dict) -> bool:
    """Write the report once: the replay is completed."""
    now = utcnow()
    result = session.execute(
        _held(replay_id, claimed_at).values(status=ReplayStatus.COMPLETED, processed=processed, report=report, state=None,
                                            claimed_at=None, updated_at=now, completed_at=now)
        .execution_options(synchronize_session=False)
    )
    return result.rowcount == 1


def fail(session: Session, *, replay_id: uuid.UUID, message: str) -> bool:
    """End an unfinished replay as failed (its version is gone, its messages ran out)."""
    now = utcnow()
    result = session.execute(
        update(Replay).where(Replay.id == replay_id, Replay.status.in_(UNFINISHED))
        .values(status=ReplayStatus.FAILED, error=message, state=None, claimed_at=None, updated_at=now, completed_at=now)
        .execution_options(synchronize_session=False)
    )
    return result.rowcount == 1
