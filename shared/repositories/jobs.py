"""Jobs, including the conditional updates that make job processing idempotent."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
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

from shared import claimants
from shared.db.models import PROCESSING_JOBS_SQL, UNFINISHED_JOBS_SQL, Engine, EngineVersion, Job, JobStatus, Tenant
from shared.db.types import utcnow
from shared.repositories import rollups, tenant_workers


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
        .values(status=JobStatus.PROCESSING, started_at=now, updated_at=now, claimant=claimants.current())
        .execution_options(synchronize_session=False)
    )
    return now if result.rowcount == 1 else None


# The claim of a batch, built once: the ids bound as one expanding IN, the claim time and the
# lease's edge as values (building it per call, and the ORM's bulk UPDATE loading the rows it
# returns, was a third of the worker handler's CPU per job; issue 15).
_CLAIM = (
    update(JOBS)
    .where(JOBS.c.id.in_(bindparam("ids", expanding=True)), claimable(bindparam("stale")))
    .values(status=JobStatus.PROCESSING, started_at=bindparam("now"), updated_at=bindparam("now"), claimant=bindparam("claimant"))
    .returning(*JOBS.c)
)


def claim_many(
    session: Session, *, job_ids: list[uuid.UUID], lease_seconds: int, claimant: str | None = None
) -> tuple[datetime, list[Job]]:
    """``claim_for_processing`` for many jobs in one conditional UPDATE: the claim time, and the
    jobs this call claimed (any order; the others were not ours), as claimed, not attached to the
    session (as ``insert_new`` returns its job). Each claim records its ``claimant`` (default:
    this process, ``shared.claimants.current``)."""
    now = utcnow()
    return now, _claim(session, job_ids, now - timedelta(seconds=lease_seconds), now, claimant)


def _claim(session: Session, job_ids, stale: datetime, now: datetime, claimant: str | None) -> list[Job]:
    rows = session.connection().execute(
        _CLAIM, {"ids": list(job_ids), "stale": stale, "now": now, "claimant": claimant or claimants.current()}
    ).mappings().all()
    return [Job(**row) for row in rows]


# --- Fair claims: at most a tenant's cap of workers busy at once ------------------------------

# Which of a batch's jobs a claim may take (primary-key lookups), whose they are, and how many
# workers their tenant keeps busy on live claims (shared.repositories.tenant_workers), counted once
# per tenant of the batch, not once per job.
_CANDIDATES = (
    select(JOBS.c.id, JOBS.c.tenant_id)
    .where(JOBS.c.id.in_(bindparam("ids", expanding=True)), claimable(bindparam("stale")))
    .cte("candidates")
)
# (Materialized: else PostgreSQL may count again for every job it joins to its tenant's count.)
_ROOM = (
    select(_CANDIDATES.c.tenant_id,
           tenant_workers.busy(_CANDIDATES.c.tenant_id, bindparam("stale"), tenant_workers.NO_REPLAY).label("running"))
    .group_by(_CANDIDATES.c.tenant_id)
    .cte("room")
    .prefix_with("MATERIALIZED", dialect="postgresql")
)
_CLAIMABLE = select(_CANDIDATES.c.id, _CANDIDATES.c.tenant_id, _ROOM.c.running).join_from(
    _CANDIDATES, _ROOM, _ROOM.c.tenant_id == _CANDIDATES.c.tenant_id
)
# Claims of this call handed straight back (a concurrent claim took the tenant's room first).
_UNCLAIM = (
    update(JOBS)
    .where(JOBS.c.id.in_(bindparam("ids", expanding=True)), JOBS.c.status == JobStatus.PROCESSING,
           JOBS.c.started_at == bindparam("claimed_at"))
    .values(status=JobStatus.PENDING, started_at=None, claimant=None, updated_at=bindparam("claimed_at"))
)


def claim_fair(
    session: Session, *, job_ids: list[uuid.UUID], lease_seconds: int, max_per_tenant: int,
    tenant_limits: Mapping[uuid.UUID, int] | None = None, claimant: str | None = None,
) -> tuple[datetime, list[Job], dict[uuid.UUID, uuid.UUID]]:
    """``claim_many`` under a cap: no tenant ends with more than ``max_per_tenant`` workers busy on
    live claims (``tenant_limits``: a tenant's own cap instead; 0 is no cap): each of its jobs
    processing is one, each chunk of its batches processing one, each replay running one
    (``shared.repositories.tenant_workers``). Returns the claim time, the jobs claimed, and the
    jobs deferred (id -> tenant id): claimable but over their tenant's cap, left pending, for the
    caller to queue again later. Ids neither claimed nor deferred were not ours (finished, held
    by a live claim, unknown), as with ``claim_many``.

    Within the cap, a tenant's jobs are taken, and returned, in ``job_ids``' order. The room is
    first read (with the claimable jobs, one statement), then only the jobs within it are
    claimed; then, with the tenants' claims serialized (``tenant_workers.lock``, held to the commit), the tenants' busy
    workers are counted again and any excess of this call's claims (a concurrent claim of a job,
    a chunk or a replay took the room meanwhile) is handed back and deferred, so the cap holds
    however many workers claim at once."""
    limits = tenant_limits or {}

    def cap(tenant_id: uuid.UUID) -> int:
        return limits.get(tenant_id, max_per_tenant)

    now = utcnow()
    stale = now - timedelta(seconds=lease_seconds)
    connection = session.connection()
    order = {job_id: i for i, job_id in reversed(list(enumerate(job_ids)))}  # a job twice: its first place
    candidates = sorted(connection.execute(_CLAIMABLE, {"ids": list(order), "stale": stale}).all(), key=lambda r: order[r.id])
    running = {row.tenant_id: row.running for row in candidates}
    chosen, deferred = [], {}
    for row in candidates:
        limit = cap(row.tenant_id)
        if limit > 0 and running.get(row.tenant_id, 0) >= limit:
            deferred[row.id] = row.tenant_id
            continue
        running[row.tenant_id] = running.get(row.tenant_id, 0) + 1
        chosen.append(row.id)
    # In ``job_ids``' order (an UPDATE returns its rows in the table's order).
    jobs = sorted(_claim(session, chosen, stale, now, claimant), key=lambda job: order[job.id]) if chosen else []
    capped = sorted({job.tenant_id for job in jobs if cap(job.tenant_id) > 0})
    if not capped:
        return now, jobs, deferred
    tenant_workers.lock(connection, capped)
    running = tenant_workers.count(connection, tenants=capped, stale=stale)
    excess: list[uuid.UUID] = []
    for tenant_id in capped:
        over = running.get(tenant_id, 0) - cap(tenant_id)
        if over > 0:
            mine = sorted((job.id for job in jobs if job.tenant_id == tenant_id), key=order.__getitem__)
            excess += mine[-over:]
    if excess:
        connection.execute(_UNCLAIM, {"ids": excess, "claimed_at": now})
        handed_back = set(excess)
        deferred.update({job.id: job.tenant_id for job in jobs if job.id in handed_back})
        jobs = [job for job in jobs if job.id not in handed_back]
    return now, jobs, deferred


def release_claim(session: Session, *, job_id: uuid.UUID, claimed_at: datetime) -> None:
    """Hand a claimed job back to pending so a redelivery can try again."""
    session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == JobStatus.PROCESSING, Job.started_at == claimed_at)
        .values(status=JobStatus.PENDING, started_at=None, claimant=None, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )


def claimants_at(session: Session, *, place: str) -> list[str]:
    """The claimants of ``place`` (``shared.claimants.here``) that hold jobs processing."""
    return list(session.scalars(
        select(Job.claimant).distinct()
        .where(text(PROCESSING_JOBS_SQL), Job.claimant.startswith(place + "|", autoescape=True))
    ))


def release_claims_of(session: Session, *, claimants_gone: list[str]) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """Hand back to pending, as of now, the jobs processing on claims of ``claimants_gone`` (the
    processes that held them no longer run); returns each job's id and tenant id."""
    if not claimants_gone:
        return []
    result = session.execute(
        update(Job)
        .where(Job.status == JobStatus.PROCESSING, Job.claimant.in_(claimants_gone))
        .values(status=JobStatus.PENDING, started_at=None, claimant=None, updated_at=utcnow())
        .returning(Job.id, Job.tenant_id)
        .execution_options(synchronize_session=False)
    )
    return [(row.id, row.tenant_id) for row in result]


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


def count_unfinished(session: Session, *, tenant_id: uuid.UUID, of_batches: bool = False) -> int:
    """The tenant's jobs pending or processing: of execute and test-execute, or with ``of_batches``
    of batches. On PostgreSQL the tenant's row is locked first, so concurrent executes of one
    tenant count one after another (until their transactions end); FOR NO KEY UPDATE, which the
    foreign-key checks of other writers (a worker's rollups naming the tenant) do not wait for:
    FOR UPDATE made them, and with the execute then waiting for the worker's rollup rows, deadlock."""
    session.execute(select(Tenant.id).where(Tenant.id == tenant_id).with_for_update(key_share=True))
    made_by = Job.batch_id.is_not(None) if of_batches else Job.batch_id.is_(None)
    return session.scalar(
        select(func.count()).select_from(Job).where(Job.tenant_id == tenant_id, text(UNFINISHED_JOBS_SQL), made_by)
    )


# --- The sweeper's queries: work that may have lost its message (shared.services.sweeper) -----


def _unqueued(pending_before: datetime, claimed_before: datetime):
    return or_(
        and_(Job.status == JobStatus.PENDING, Job.updated_at < pending_before),
        and_(Job.status == JobStatus.PROCESSING, Job.started_at < claimed_before),
    )


def requeue_unqueued(
    session: Session, *, pending_before: datetime, claimed_before: datetime, limit: int | None
) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """Jobs pending since before ``pending_before``, or processing on a claim older than
    ``claimed_before`` (the lease), oldest first: each is made pending again as of now (an
    abandoned claim is released, as ``release_claim`` does), so the next sweep leaves it to the
    message about to be sent rather than sending one more; returns their ids and tenant ids."""
    candidates = list(session.scalars(
        select(Job.id).where(_unqueued(pending_before, claimed_before)).order_by(Job.updated_at).limit(limit)
    ))
    if not candidates:
        return []
    # Conditional again: a worker that claimed one meanwhile keeps it.
    result = session.execute(
        update(Job)
        .where(Job.id.in_(candidates), _unqueued(pending_before, claimed_before))
        .values(status=JobStatus.PENDING, started_at=None, claimant=None, updated_at=utcnow())
        .returning(Job.id, Job.tenant_id)
        .execution_options(synchronize_session=False)
    )
    return [(row.id, row.tenant_id) for row in result]


def lanes_of(session: Session, *, job_ids: list[uuid.UUID]) -> dict[uuid.UUID, str]:
    """The lane of each job's version ("standard" or "slow"): where a job queued again belongs."""
    if not job_ids:
        return {}
    rows = session.execute(
        select(Job.id, EngineVersion.lane).join(EngineVersion, EngineVersion.id == Job.version_id).where(Job.id.in_(job_ids))
    )
    return {row.id: row.lane for row in rows}


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
