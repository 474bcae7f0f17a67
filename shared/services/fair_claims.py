"""Fair claims: no tenant holds more than its share of the workers.

A worker claims a batch of job messages at once (``shared.repositories.jobs``). With
``tenant_max_concurrent_jobs`` set (0 is off), a job whose tenant already has that many jobs
processing is not claimed: it stays pending and is *deferred*. Its message must still come back
later, and not as a failed delivery: each delivery counts towards the queue's dead-letter limit
(5 on AWS, 3 in dev), so a tenant with a long backlog would see its jobs dead-lettered and failed.
``defer`` queues each deferred job again as a new message, ``tenant_cap_retry_seconds`` from now
(its tenant's message group, so SQS's fair queue still serves quieter tenants first); the message
that brought it is then done. Only a job whose new message could not be sent is reported for its
old message to come again.

The worker's batch uses it as ``claim`` in place of ``jobs.claim_many`` (then the jobs ``claim``
returns are the batch's), and calls ``defer`` with ``Claim.deferred`` once the claim's transaction
has committed, adding what it returns to the messages that must come again.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.orm import Session

from shared.adapters import queues
from shared.config import get_settings
from shared.db.models import Job
from shared.repositories import jobs as job_repo

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
