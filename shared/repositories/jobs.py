"""Jobs, including the conditional updates that make job processing idempotent."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy import (
    Table,
    and_,
    bindparam,
    func,
    or_,
    select,
    text,
    union_all,
    update,
)
from sqlalchemy.orm import Session

from shared.db.models import UNFINISHED_JOBS_SQL, Engine, Job, JobStatus, Tenant
from shared.db.types import utcnow
from shared.repositories import rollups


def add(session: Session, job: Job) -> Job:
    """Insert a new job and count it in the daily rollups, in the session's transaction; the job
    stays in the session (its later changes are flushed with it)."""
    session.add(job)
    session.flush()
    rollups.record_created(session.connection(), job)
    return job


JOBS = Job.__table__


def insert_new(session: Session, **values) -> Job:
    """``add`` for a job that is not changed again in this session (the consumer API's execute):
    the row inserted and counted in the rollups without the ORM's unit of work (on PostgreSQL in
    one statement, ``rollups.insert_and_record_created``). Created and updated now, pending unless
    ``values`` say otherwise; returns the job as inserted, not attached to the session."""
    now = utcnow()
    row = _with_defaults(JOBS, {"status": JobStatus.PENDING, "is_test": False, **values, "created_at": now, "updated_at": now})
    job = Job(**row)
    rollups.insert_and_record_created(session.connection(), JOBS, row, job)
    return job


def _with_defaults(table: Table, row: dict) -> dict:
    """``row`` with the Python-side default of every column it leaves out (the id), as a Core
    INSERT would add them: the same row then goes in whichever statement carries it (on
    PostgreSQL a text INSERT inside the rollups' statement, which adds none)."""
    for column in table.c:
        default = column.default
        if column.name not in row and default is not None and (default.is_scalar or default.is_callable):
            row[column.name] = default.arg(None) if default.is_callable else default.arg
    return row


def get_job(session: Session, *, job_id: uuid.UUID) -> Job | None:
    """A job by id alone (the worker and webhook sender, which hold only the id)."""
    return session.get(Job, job_id)


# The consumer API reads a job with its engine (whose IP whitelist is checked first): one statement.
_JOB_WITH_ENGINE = (
    select(Job, Engine)
    .outerjoin(Engine, and_(Engine.id == Job.engine_id, Engine.tenant_id == Job.tenant_id))
    .where(Job.id == bindparam("job_id"))
)


def get_job_with_engine(session: Session, *, job_id: uuid.UUID) -> tuple[Job | None, Engine | None]:
    """A job by id alone and its engine (None when the job is unknown or its engine was deleted)."""
    row = session.execute(_JOB_WITH_ENGINE, {"job_id": job_id}).first()
    return (row[0], row[1]) if row is not None else (None, None)


def claimable(stale):
    """Which jobs a claim may take: pending, or processing on a claim made before ``stale`` (the
    lease's edge, a datetime or a bound parameter: that claim's worker died)."""
    return or_(JOBS.c.status == JobStatus.PENDING, and_(JOBS.c.status == JobStatus.PROCESSING, JOBS.c.started_at < stale))


def claim_for_processing(session: Session, *, job_id: uuid.UUID, lease_seconds: int) -> datetime | None:
    """Move pending (or abandoned processing) to processing; returns the claim time, or None if not ours."""
    now = utcnow()
    result = session.execute(
        update(Job)
        .where(Job.id == job_id, claimable(now - timedelta(seconds=lease_seconds)))
        .values(status=JobStatus.PROCESSING, started_at=now, updated_at=now)
        .execution_options(synchronize_session=False)
    )
    return now if result.rowcount == 1 else None


# The claim of a batch, built once: the ids bound as one expanding IN, the claim time and the
# lease's edge as values (building it per call, and the ORM's bulk UPDATE loading the rows it
# returns, was a third of the worker handler's CPU per job; issue 15).
_CLAIM = (
    update(JOBS)
    .where(JOBS.c.id.in_(bindparam("ids", expanding=True)), claimable(bindparam("stale")))
    .values(status=JobStatus.PROCESSING, started_at=bindparam("now"), updated_at=bindparam("now"))
    .returning(*JOBS.c)
)


def claim_many(session: Session, *, job_ids: list[uuid.UUID], lease_seconds: int) -> tuple[datetime, list[Job]]:
    """``claim_for_processing`` for many jobs in one conditional UPDATE: the claim time, and the
    jobs this call claimed (any order; the others were not ours), as claimed, not attached to the
    session (as ``insert_new`` returns its job)."""
    now = utcnow()
    rows = session.connection().execute(
        _CLAIM, {"ids": list(job_ids), "stale": now - timedelta(seconds=lease_seconds), "now": now}
    ).mappings().all()
    return now, [Job(**row) for row in rows]


def release_claim(session: Session, *, job_id: uuid.UUID, claimed_at: datetime) -> None:
    """Hand a claimed job back to pending so a redelivery can try again."""
    session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == JobStatus.PROCESSING, Job.started_at == claimed_at)
        .values(status=JobStatus.PENDING, started_at=None, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )


def finish(session: Session, *, job_id: uuid.UUID, claimed_at: datetime, **values) -> bool:
    """Record the outcome of a claimed job; False when the claim was lost meanwhile."""
    return bool(finish_many(session, claimed_at=claimed_at, outcomes=[(job_id, values)]))


def finish_many(
    session: Session, *, claimed_at: datetime, outcomes: list[tuple[uuid.UUID, dict]], now: datetime | None = None
) -> set[uuid.UUID]:
    """Record the outcomes of jobs claimed together, each conditional on its claim, and count them
    in the rollups folded; returns the jobs finished (a job whose claim was lost meanwhile is not).

    One statement for all of them (usually; one per set of fields written: completed and failed
    jobs write different ones): ``WITH outcome AS (SELECT ... UNION ALL ...) UPDATE jobs ... FROM
    outcome ... RETURNING`` the rollups' columns of exactly the rows it changed, so a redelivery
    or a lost claim never counts twice and nothing is read again. ``now`` (default: the current
    time) is the finish time written (updated_at and completed_at)."""
    if not outcomes:
        return set()
    now = now or utcnow()
    by_fields: dict[tuple[str, ...], list[tuple[uuid.UUID, dict]]] = {}
    for job_id, values in outcomes:
        by_fields.setdefault(tuple(sorted(values)), []).append((job_id, values))
    connection = session.connection()
    finished = []
    for fields, group in by_fields.items():
        params = {"claimed_at": claimed_at, "now": now}
        for i, (job_id, values) in enumerate(group):
            params[f"o{i}_id"] = job_id
            params.update({f"o{i}_{k}": v for k, v in values.items()})
        finished += connection.execute(_finish_statement(fields, len(group)), params).all()
    if finished:
        rollups.record_finished_many(connection, finished)
    return {row.id for row in finished}


_finish_statements: dict[tuple[tuple[str, ...], int], object] = {}


def _finish_statement(fields: tuple[str, ...], rows: int):
    """The conditional finish of ``rows`` jobs setting ``fields``, built once per shape (bound per call)."""
    statement = _finish_statements.get((fields, rows))
    if statement is None:
        table = JOBS
        names = ("id", *fields)
        # SELECTs of typed binds (not VALUES, which SQLAlchemy cannot cache compiled): on
        # PostgreSQL each bind carries its cast, as the UPDATE's columns need.
        each = [select(*[bindparam(f"o{i}_{name}", type_=table.c[name].type).label(name) for name in names]) for i in range(rows)]
        outcome = (union_all(*each) if rows > 1 else each[0]).cte("outcome")
        statement = _finish_statements[(fields, rows)] = (
            update(table)
            .where(table.c.id == outcome.c.id, table.c.status == JobStatus.PROCESSING, table.c.started_at == bindparam("claimed_at"))
            .values(updated_at=bindparam("now"), completed_at=bindparam("now"), **{k: outcome.c[k] for k in fields})
            .returning(table.c.id, *[table.c[c.key] for c in rollups.JOB_COLUMNS])
        )
    return statement


def _finished(session: Session, job) -> bool:
    if job is None:
        return False
    rollups.record_finished(session.connection(), job)
    return True


def fail_unfinished(session: Session, *, job_id: uuid.UUID, message: str) -> bool:
    """Mark a pending or processing job failed (dead letters); False if it had already finished."""
    now = utcnow()
    result = session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status.in_([JobStatus.PENDING, JobStatus.PROCESSING]))
        .values(status=JobStatus.FAILED, error_message=message, updated_at=now, completed_at=now)
        .returning(*rollups.JOB_COLUMNS)
        .execution_options(synchronize_session=False)
    )
    return _finished(session, result.one_or_none())


def claim_webhook(session: Session, *, job_id: uuid.UUID) -> datetime | None:
    """Reserve the single webhook attempt; returns the attempt time, or None if already made."""
    now = utcnow()
    result = session.execute(
        update(Job)
        .where(Job.id == job_id, Job.webhook_url.is_not(None), Job.webhook_sent_at.is_(None))
        .values(webhook_sent_at=now)
        .execution_options(synchronize_session=False)
    )
    return now if result.rowcount == 1 else None


def record_webhook_status(session: Session, *, job_id: uuid.UUID, status: int) -> None:
    """Store the receiver's answer to the webhook attempt."""
    session.execute(
        update(Job).where(Job.id == job_id).values(webhook_response_status=status).execution_options(synchronize_session=False)
    )


def count_unfinished(session: Session, *, tenant_id: uuid.UUID) -> int:
    """The tenant's jobs pending or processing. On PostgreSQL the tenant's row is locked first, so
    concurrent executes of one tenant count one after another (until their transactions end)."""
    session.execute(select(Tenant.id).where(Tenant.id == tenant_id).with_for_update())
    return session.scalar(
        select(func.count()).select_from(Job).where(Job.tenant_id == tenant_id, text(UNFINISHED_JOBS_SQL))
    )


# --- The sweeper's queries: work that may have lost its message (shared.services.sweeper) -----


def _unqueued(pending_before: datetime, claimed_before: datetime):
    return or_(
        and_(Job.status == JobStatus.PENDING, Job.updated_at < pending_before),
        and_(Job.status == JobStatus.PROCESSING, Job.started_at < claimed_before),
    )


def requeue_unqueued(session: Session, *, pending_before: datetime, claimed_before: datetime, limit: int | None) -> list[uuid.UUID]:
    """Jobs pending since before ``pending_before``, or processing on a claim older than
    ``claimed_before`` (the lease), oldest first: each is made pending again as of now (an
    abandoned claim is released, as ``release_claim`` does), so the next sweep leaves it to the
    message about to be sent rather than sending one more; returns their ids."""
    candidates = list(session.scalars(
        select(Job.id).where(_unqueued(pending_before, claimed_before)).order_by(Job.updated_at).limit(limit)
    ))
    if not candidates:
        return []
    # Conditional again: a worker that claimed one meanwhile keeps it.
    result = session.execute(
        update(Job)
        .where(Job.id.in_(candidates), _unqueued(pending_before, claimed_before))
        .values(status=JobStatus.PENDING, started_at=None, updated_at=utcnow())
        .returning(Job.id)
        .execution_options(synchronize_session=False)
    )
    return list(result.scalars())


def unattempted_webhook_job_ids(session: Session, *, finished_before: datetime, limit: int | None) -> list[uuid.UUID]:
    """Jobs finished before ``finished_before`` with a webhook whose single attempt never began."""
    query = (
        select(Job.id)
        .where(
            Job.status.in_([JobStatus.COMPLETED, JobStatus.FAILED]),
            Job.webhook_url.is_not(None),
            Job.webhook_sent_at.is_(None),
            Job.completed_at < finished_before,
        )
        .order_by(Job.completed_at)
        .limit(limit)
    )
    return list(session.scalars(query))
