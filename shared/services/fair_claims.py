"""Fair claims: no tenant holds more than its share of the workers.

A worker claims a batch of job messages at once (``shared.repositories.jobs``). With
``tenant_max_concurrent_jobs`` set (0 is off), a job whose tenant already keeps that many
workers busy is not claimed: it stays pending and is *deferred*. Its message must still come back
later, and not as a failed delivery: each delivery counts towards the queue's dead-letter limit
(5 on AWS, 3 in dev), so a tenant with a long backlog would see its jobs dead-lettered and failed.
``defer`` queues each deferred job again as a new message, ``tenant_cap_retry_seconds`` from now
(its tenant's message group, so SQS's fair queue still serves quieter tenants first); the message
that brought it is then done. Only a job whose new message could not be sent is reported for its
old message to come again.

The worker's batch uses it as ``claim`` in place of ``jobs.claim_many`` (then the jobs ``claim``
returns are the batch's), and calls ``defer`` with ``Claim.deferred`` once the claim's transaction
has committed, adding what it returns to the messages that must come again.

A job is not the only work that holds a worker: a chunk of a batch (``shared.services.batch_runner``)
and a shadow replay (``shared.services.replay_runner``) do too, each as one worker of its tenant
(a chunk's jobs are calculated one after another by one worker), and the cap counts them all
(``shared.repositories.tenant_workers``): a job claim counts the tenant's chunks processing and
replays running, and a chunk (``claim_chunk``) or a replay (``replay_may_run``) whose tenant is at
its cap waits the same way, its message queued again ``tenant_cap_retry_seconds`` later on its
lane, its tenant's message group (``defer_chunk``; the replay's runner queues its own).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from shared.adapters import queues
from shared.config import get_settings
from shared.db.models import Job
from shared.db.types import utcnow
from shared.repositories import batches as batch_repo
from shared.repositories import jobs as job_repo
from shared.repositories import tenant_workers

log = logging.getLogger(__name__)


@dataclass
class Claim:
    """A fair claim: its time, the jobs it claimed, and those it deferred (job id -> tenant id)."""

    claimed_at: datetime
    jobs: list[Job]
    deferred: dict[uuid.UUID, uuid.UUID] = field(default_factory=dict)


def tenant_limits() -> dict[uuid.UUID, int]:
    """The tenants whose cap is not ``tenant_max_concurrent_jobs`` (the setting
    ``tenant_max_concurrent_jobs_by_tenant``), by tenant id."""
    return dict(get_settings().tenant_max_concurrent_jobs_by_tenant)


def cap_of(tenant_id: uuid.UUID) -> int:
    """How many workers the tenant may keep busy at once (0: no cap)."""
    settings = get_settings()
    return settings.tenant_max_concurrent_jobs_by_tenant.get(tenant_id, settings.tenant_max_concurrent_jobs)


def claim(session: Session, *, job_ids: list[uuid.UUID], lease_seconds: int) -> Claim:
    """Claim the batch's jobs, each tenant up to its cap; the rest of the claimable jobs deferred."""
    settings = get_settings()
    limits = tenant_limits()
    if settings.tenant_max_concurrent_jobs == 0 and not limits:
        claimed_at, jobs = job_repo.claim_many(session, job_ids=job_ids, lease_seconds=lease_seconds)
        return Claim(claimed_at, jobs)
    claimed_at, jobs, deferred = job_repo.claim_fair(
        session, job_ids=job_ids, lease_seconds=lease_seconds,
        max_per_tenant=settings.tenant_max_concurrent_jobs, tenant_limits=limits,
    )
    if deferred:
        log.info("%d jobs deferred: their tenants have their share of the workers", len(deferred))
    return Claim(claimed_at, jobs, deferred)


def defer(deferred: dict[uuid.UUID, uuid.UUID], *, lane: str = "standard") -> dict[uuid.UUID, BaseException]:
    """Queue each deferred job again, ``tenant_cap_retry_seconds`` from now, on ``lane`` (the one
    its message came on); returns the jobs whose message could not be sent (their message must
    come again: report it failed)."""
    delay = get_settings().tenant_cap_retry_seconds
    failed: dict[uuid.UUID, BaseException] = {}
    for job_id, tenant_id in deferred.items():
        try:
            queues.enqueue_job(job_id, tenant_id=tenant_id, delay_seconds=delay, lane=lane)
        except Exception as exc:
            log.warning("deferred job %s could not be queued again; its message comes again", job_id, exc_info=True)
            failed[job_id] = exc
    return failed


@dataclass
class ChunkClaim:
    """A chunk's claim: its time, the jobs it claimed (index order), and whether it was deferred."""

    claimed_at: datetime
    jobs: list
    deferred: bool = False


def claim_chunk(
    session: Session, *, batch_id: uuid.UUID, tenant_id: uuid.UUID, first: int, end: int, lease_seconds: int
) -> ChunkClaim:
    """Claim a chunk of a batch's jobs as one worker of its tenant; deferred (nothing claimed)
    while its tenant has its cap of workers busy."""
    cap = cap_of(tenant_id)
    if cap == 0:
        return ChunkClaim(*batch_repo.claim_chunk(session, batch_id=batch_id, first=first, end=end, lease_seconds=lease_seconds))
    claimed_at, jobs, deferred = batch_repo.claim_chunk_within(
        session, batch_id=batch_id, tenant_id=tenant_id, first=first, end=end, lease_seconds=lease_seconds, cap=cap,
    )
    if deferred:
        log.info("batch %s chunk %d..%d deferred: its tenant has its share of the workers", batch_id, first, end)
    return ChunkClaim(claimed_at, jobs, deferred)


def defer_chunk(batch_id: uuid.UUID, chunk: int, *, tenant_id: uuid.UUID, lane: str = "standard") -> None:
    """Queue a deferred chunk again, ``tenant_cap_retry_seconds`` from now, on ``lane`` (the one its
    message came on), its tenant's message group; raises when it could not be sent (then the
    message that brought it must come again)."""
    delay = get_settings().tenant_cap_retry_seconds
    queues.enqueue_batch_chunk(batch_id, chunk, tenant_id=tenant_id, lane=lane, delay_seconds=delay)


def replay_may_run(session: Session, *, tenant_id: uuid.UUID, replay_id: uuid.UUID, just_claimed: bool = False) -> bool:
    """Whether a replay of the tenant may run (on): its tenant's busy workers, this replay aside,
    are fewer than the cap. ``just_claimed``: the replay's claim was just written in this
    transaction; the tenant's claims are serialized first (``tenant_workers.lock``, as a job's or a
    chunk's recount is), so a replay that took the last room at the same time as a job or a chunk
    finds out (then roll the claim back and queue the replay again)."""
    cap = cap_of(tenant_id)
    if cap <= 0:
        return True
    connection = session.connection()
    if just_claimed:
        tenant_workers.lock(connection, [tenant_id])
    stale = utcnow() - timedelta(seconds=get_settings().processing_lease_seconds)
    return tenant_workers.count(connection, tenants=[tenant_id], stale=stale, except_replay=replay_id).get(tenant_id, 0) < cap
