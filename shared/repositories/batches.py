"""Batches and their jobs in bulk: one insert for the jobs, one claim and one finish per chunk."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

from sqlalchemy import ARRAY, JSON, Integer, Text, Uuid, and_, bindparam, cast, exists, func, insert, select, update
from sqlalchemy.orm import Session

from shared import claimants
from shared.db.models import Batch, Job, JobStatus
from shared.db.types import utcnow
from shared.repositories import rollups, tenant_workers
from shared.repositories.jobs import JOBS, claimable
UNFINISHED = (JobStatus.PENDING, JobStatus.PROCESSING)


def add(session: Session, batch: Batch, jobs: list[dict[str, Any]]) -> Batch:
    """Insert a batch and its jobs, counted in the daily rollups, in the session's transaction.

    The jobs go in multi-row INSERTs (SQLAlchemy's "insertmanyvalues", up to 1,000 rows a
    statement): asking for RETURNING is what turns it on for pg8000, whose executemany otherwise
    sends one INSERT per row (10,000 round trips for a full batch)."""
    session.add(batch)
    session.flush()
    if jobs:
        session.execute(insert(Job).returning(JOBS.c.id), jobs)
        rollups.record_created_many(session.connection(), [SimpleNamespace(**job) for job in jobs])
    return batch


def get(session: Session, *, batch_id: uuid.UUID) -> Batch | None:
    """A batch by id alone (the caller's tenant is checked by the service; the worker holds only the id)."""
    return session.get(Batch, batch_id)


def counts(session: Session, *, batch_id: uuid.UUID) -> dict[str, int]:
    """The batch's jobs by status."""
    rows = session.execute(select(Job.status, func.count()).where(Job.batch_id == batch_id).group_by(Job.status))
    return {str(status): n for status, n in rows}


def _in_chunk(batch_id: uuid.UUID, first: int, end: int):
    return and_(Job.batch_id == batch_id, Job.batch_index >= first, Job.batch_index < end)


def claim_chunk(session: Session, *, batch_id: uuid.UUID, first: int, end: int, lease_seconds: int) -> tuple[datetime, list]:
    """Move the chunk's pending (or abandoned processing) jobs to processing in one update;
    the claim time and the claimed jobs (id, tenant_id, batch_index, inputs, created_at), in index order."""
    now = utcnow()
    result = session.execute(
        update(Job)
        .where(_in_chunk(batch_id, first, end), claimable(now - timedelta(seconds=lease_seconds)))
        .values(status=JobStatus.PROCESSING, started_at=now, updated_at=now, claimant=claimants.current())
        .returning(Job.id, Job.tenant_id, Job.batch_index, Job.inputs, Job.created_at)
        .execution_options(synchronize_session=False)
    )
    return now, sorted(result.all(), key=lambda row: row.batch_index)


def claim_chunk_within(
    session: Session, *, batch_id: uuid.UUID, tenant_id: uuid.UUID, first: int, end: int, lease_seconds: int, cap: int,
) -> tuple[datetime, list, bool]:
    """``claim_chunk`` while the batch's tenant has fewer than ``cap`` workers busy (a chunk
    processing is one of them, a job one, a replay one: ``shared.repositories.tenant_workers``);
    the claim time, the claimed jobs, and whether the chunk was deferred: it has jobs to compute
    but its tenant has no room, so nothing was claimed (the caller queues it again later).

    The room is read by the claim's own UPDATE (the chunk is claimed only below the cap: one
    statement; nothing is written for a chunk that waits). Then, as ``jobs.claim_fair`` does,
    with the tenant's claims serialized, its busy workers are counted again, and the chunk is
    handed back (deferred) if a concurrent claim took the room meanwhile. A claim that took
    nothing asks once more whether the chunk has jobs to compute: if so it was deferred."""
    now = utcnow()
    stale = now - timedelta(seconds=lease_seconds)
    connection = session.connection()
    claimed = connection.execute(_CLAIM_WITHIN, {
        "chunk_batch": batch_id, "first": first, "end": end, "stale": stale, "now": now,
        "claimant": claimants.current(), "tenant": tenant_id, "cap": cap,
    }).all()
    if not claimed:
        waiting = session.scalar(select(exists().where(_in_chunk(batch_id, first, end), claimable(stale))))
        return now, [], bool(waiting)
    tenant_workers.lock(connection, [tenant_id])
    if tenant_workers.count(connection, tenants=[tenant_id], stale=stale).get(tenant_id, 0) > cap:
        release_chunk(session, batch_id=batch_id, first=first, end=end, claimed_at=now)
        return now, [], True
    return now, sorted(claimed, key=lambda row: row.batch_index), False


# A chunk's claim below its tenant's cap: the tenant's busy workers read by the UPDATE itself.
_CLAIM_WITHIN = (
    update(JOBS)
    .where(
        JOBS.c.batch_id == bindparam("chunk_batch"),
        JOBS.c.batch_index >= bindparam("first"), JOBS.c.batch_index < bindparam("end"),
        claimable(bindparam("stale")),
        tenant_workers.busy(bindparam("tenant"), bindparam("stale"), tenant_workers.NO_REPLAY) < bindparam("cap"),
    )
    .values(status=JobStatus.PROCESSING, started_at=bindparam("now"), updated_at=bindparam("now"), claimant=bindparam("claimant"))
    .returning(JOBS.c.id, JOBS.c.tenant_id, JOBS.c.batch_index, JOBS.c.inputs, JOBS.c.created_at)
)


def release_chunk(session: Session, *, batch_id: uuid.UUID, first: int, end: int, claimed_at: datetime) -> None:
    """Hand the chunk's jobs still held by this claim back to pending, for a redelivery."""
    session.execute(
        update(Job)
        .where(_in_chunk(batch_id, first, end), Job.status == JobStatus.PROCESSING, Job.started_at == claimed_at)
        .values(status=JobStatus.PENDING, started_at=None, claimant=None, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )


_FINISH = (
    update(JOBS)
    .where(JOBS.c.id == bindparam("b_id"), JOBS.c.status == JobStatus.PROCESSING, JOBS.c.started_at == bindparam("b_claimed"))
    .values(
        status=bindparam("b_status"), outputs=bindparam("b_outputs"), error_message=bindparam("b_error"),
        execution_time_ms=bindparam("b_ms"), calc_engine=bindparam("b_engine"),
        result_key=bindparam("b_result_key"), updated_at=bindparam("b_now"), completed_at=bindparam("b_now"),
    )
)


# PostgreSQL: the chunk's outcomes as arrays, unnested into rows, one UPDATE for them all (one
# statement text whatever the chunk's size; pg8000's executemany would send one UPDATE per job).
_OUTCOME = func.unnest(
    cast(bindparam("o_ids"), ARRAY(Uuid())), cast(bindparam("o_statuses"), ARRAY(Text())),
    cast(bindparam("o_outputs"), ARRAY(Text())), cast(bindparam("o_errors"), ARRAY(Text())),
    cast(bindparam("o_ms"), ARRAY(Integer())), cast(bindparam("o_engines"), ARRAY(Text())),
    cast(bindparam("o_result_keys"), ARRAY(Text())),
).table_valued("id", "status", "outputs", "error_message", "execution_time_ms", "calc_engine", "result_key").render_derived("outcome")
_FINISH_ALL = (
    update(JOBS)
    .where(JOBS.c.id == _OUTCOME.c.id, JOBS.c.status == JobStatus.PROCESSING, JOBS.c.started_at == bindparam("claimed_at"))
    .values(
        status=_OUTCOME.c.status, outputs=cast(_OUTCOME.c.outputs, JSON), error_message=_OUTCOME.c.error_message,
        execution_time_ms=_OUTCOME.c.execution_time_ms, calc_engine=_OUTCOME.c.calc_engine, result_key=_OUTCOME.c.result_key,
        updated_at=bindparam("now"), completed_at=bindparam("now"),
    )
    .returning(*rollups.JOB_COLUMNS)
)


def finish_chunk(
    session: Session, *, batch_id: uuid.UUID, first: int, end: int, claimed_at: datetime, outcomes: list[dict[str, Any]]
) -> int:
    """Record each claimed job's outcome (``id``, ``status``, ``outputs``, ``error_message``,
    ``execution_time_ms``, ``calc_engine``, ``result_key``), conditional on this claim; count the jobs
    this claim finished in the rollups; returns how many. On PostgreSQL one statement for the chunk,
    on SQLite one executemany (a loop in C there)."""
    if not outcomes:
        return 0
    now = utcnow()
    connection = session.connection()
    if connection.dialect.name == "postgresql":
        finished = connection.execute(_FINISH_ALL, {
            "claimed_at": claimed_at, "now": now,
            "o_ids": [o["id"] for o in outcomes],
            "o_statuses": [JobStatus(o["status"]).value for o in outcomes],
            # as the JSON column stores them (None too, as JSON null, as the executemany does)
            "o_outputs": [json.dumps(o.get("outputs")) for o in outcomes],
            "o_errors": [o.get("error_message") for o in outcomes],
            "o_ms": [o.get("execution_time_ms") for o in outcomes],
            "o_engines": [o.get("calc_engine") for o in outcomes],
            "o_result_keys": [o.get("result_key") for o in outcomes],
        }).all()
        rollups.record_finished_many(connection, finished)
        return len(finished)
    session.execute(_FINISH, [
        dict(b_id=o["id"], b_claimed=claimed_at, b_status=o["status"], b_outputs=o.get("outputs"),
             b_error=o.get("error_message"), b_ms=o.get("execution_time_ms"), b_engine=o.get("calc_engine"),
             b_result_key=o.get("result_key"), b_now=now)
        for o in outcomes
    ])
    finished = session.execute(
        select(*rollups.JOB_COLUMNS).where(
            _in_chunk(batch_id, first, end), Job.started_at == claimed_at, Job.completed_at == now,
            Job.status.in_([JobStatus.COMPLETED, JobStatus.FAILED]),
        )
    ).all()
    rollups.record_finished_many(connection, finished)
    return len(finished)


def fail_chunk(session: Session, *, batch_id: uuid.UUID, first: int, end: int, message: str) -> int:
    """Fail the chunk's jobs still pending or processing (its message was dead-lettered); how many."""
    now = utcnow()
    failed = session.execute(
        update(Job)
        .where(_in_chunk(batch_id, first, end), Job.status.in_(UNFINISHED))
        .values(status=JobStatus.FAILED, error_message=message, updated_at=now, completed_at=now)
        .returning(*rollups.JOB_COLUMNS)
        .execution_options(synchronize_session=False)
    ).all()
    rollups.record_finished_many(session.connection(), failed)
    return len(failed)


def complete_if_done(session: Session, *, batch_id: uuid.UUID) -> bool:
    """Mark the batch completed once none of its jobs is pending or processing; True for the one
    call that did (call it after committing a chunk's finish, so the last finisher sees them all)."""
    now = utcnow()
    result = session.execute(
        update(Batch)
        .where(
            Batch.id == batch_id, Batch.completed_at.is_(None),
            ~exists().where(Job.batch_id == batch_id, Job.status.in_(UNFINISHED)),
        )
        .values(completed_at=now)
        .execution_options(synchronize_session=False)
    )
    return result.rowcount == 1


def claim_webhook(session: Session, *, batch_id: uuid.UUID) -> datetime | None:
    """Reserve the single webhook attempt of a completed batch; the attempt time, or None if the
    batch is not completed, has no webhook, or its attempt was already made."""
    now = utcnow()
    result = session.execute(
        update(Batch)
        .where(
            Batch.id == batch_id, Batch.completed_at.is_not(None), Batch.webhook_url.is_not(None),
            Batch.webhook_sent_at.is_(None),
        )
        .values(webhook_sent_at=now)
        .execution_options(synchronize_session=False)
    )
    return now if result.rowcount == 1 else None


def record_webhook_status(session: Session, *, batch_id: uuid.UUID, status: int) -> None:
    """Store the receiver's answer to the batch's webhook attempt."""
    session.execute(
        update(Batch).where(Batch.id == batch_id).values(webhook_response_status=status).execution_options(synchronize_session=False)
    )


def jobs_in_order(session: Session, *, batch_id: uuid.UUID, page: int = 1000) -> Iterator[Any]:
    """The batch's jobs (id, batch_index, inputs, status, outputs, error_message) by index, read a page at a time."""
    after = -1
    while True:
        rows = session.execute(
            select(Job.id, Job.batch_index, Job.inputs, Job.status, Job.outputs, Job.error_message)
            .where(Job.batch_id == batch_id, Job.batch_index > after)
            .order_by(Job.batch_index)
            .limit(page)
        ).all()
        yield from rows
        if len(rows) < page:
            return
        after = rows[-1].batch_index
