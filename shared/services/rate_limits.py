"""Brakes on consumers: requests per API key in a window, and unfinished jobs per tenant.

On by default with production values (``SHEETCALC_CONSUMER_RATE_LIMIT``, 600 a minute per key;
``SHEETCALC_TENANT_MAX_UNFINISHED_JOBS``, 1,000 jobs of execute and test-execute;
``SHEETCALC_TENANT_MAX_UNFINISHED_BATCH_JOBS``, 10,000 jobs of batches; 0 turns one off). The rate
limit counts every request whose key is valid, in fixed windows of ``consumer_rate_window_seconds``
aligned on the clock; the count lives in the database (``throttle_counters``), so it holds across
API processes and Lambdas. A tenant's batches have a quota of their own, room for one batch of the
largest size: a batch running does not refuse the tenant's executes, and a burst of executes does
not refuse its batch.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from sqlalchemy.orm import Session

from shared.config import get_settings
from shared.db.types import utcnow
from shared.errors import BadRequest, TooManyRequests
from shared.repositories import jobs as job_repo
from shared.repositories import throttles as repo

RATE_LIMITED = "Rate limit exceeded: {limit} requests per {window} seconds for this API key. Retry after {seconds} seconds."
TOO_MANY_JOBS = (
    "Too many jobs in progress: this tenant may have {limit} jobs pending or processing at once. "
    "Retry when some have finished."
)
BATCH_OVER_QUOTA = (
    "A batch of {jobs} jobs is more than this tenant may have pending or processing at once ({limit}); send smaller batches"
)
TOO_MANY_BATCH_JOBS = (
    "Too many batch jobs in progress: this tenant may have {limit} jobs of batches pending or processing at once, "
    "and this batch has {jobs}. Retry when some have finished."
)
# When a tenant's quota is full: most jobs finish in 2 to 5 seconds (the spec's polling guidance).
QUOTA_RETRY_AFTER_SECONDS = 2
# A batch waits for room its own size: each try sends and checks up to 10,000 input sets again.
BATCH_QUOTA_RETRY_AFTER_SECONDS = 10


@dataclass(frozen=True)
class Allowance:
    """Where an API key stands in its current window, after counting a request."""

    limit: int
    remaining: int
    reset_seconds: int
    exceeded: bool


def count_request(session: Session, *, key: str) -> Allowance | None:
    """Count one request of the API key named ``key``; None when there is no rate limit."""
    settings = get_settings()
    if not settings.consumer_rate_limit:
        return None
    window = settings.consumer_rate_window_seconds
    now = utcnow()
    started = datetime.fromtimestamp(now.timestamp() // window * window, tz=timezone.utc)
    counted = repo.add(
        session, key=f"rate:{key}", now=now, started_at=started, expires_at=started + timedelta(seconds=window), extend=False
    )
    # Committed at once: the request counts whatever becomes of it, and the counter's row is not
    # held while the request goes on.
    session.commit()
    limit = settings.consumer_rate_limit
    return Allowance(limit=limit, remaining=max(0, limit - counted.count), reset_seconds=counted.seconds_left(now),
                     exceeded=counted.count > limit)


def enforce(allowance: Allowance | None) -> None:
    """Refuse the request (429) when its key has used up its window."""
    if allowance is not None and allowance.exceeded:
        window = get_settings().consumer_rate_window_seconds
        message = RATE_LIMITED.format(limit=allowance.limit, window=window, seconds=allowance.reset_seconds)
        raise TooManyRequests(message, retry_after=allowance.reset_seconds)


def ensure_room_for_a_job(session: Session, *, tenant_id: uuid.UUID) -> None:
    """Refuse a new job of execute or test-execute (429) while the tenant has its quota of them
    pending or processing."""
    limit = get_settings().tenant_max_unfinished_jobs
    if limit and job_repo.count_unfinished(session, tenant_id=tenant_id) + 1 > limit:
        raise TooManyRequests(TOO_MANY_JOBS.format(limit=limit), retry_after=QUOTA_RETRY_AFTER_SECONDS)


def ensure_room_for_a_batch(session: Session, *, tenant_id: uuid.UUID, jobs: int) -> None:
    """Refuse a batch of ``jobs`` new jobs (429) while the tenant's quota of batch jobs pending or
    processing has no room for all of them; a batch larger than the quota itself is 400."""
    limit = get_settings().tenant_max_unfinished_batch_jobs
    if limit and jobs > limit:
        raise BadRequest(BATCH_OVER_QUOTA.format(jobs=jobs, limit=limit))
    if limit and job_repo.count_unfinished(session, tenant_id=tenant_id, of_batches=True) + jobs > limit:
        raise TooManyRequests(TOO_MANY_BATCH_JOBS.format(limit=limit, jobs=jobs), retry_after=BATCH_QUOTA_RETRY_AFTER_SECONDS)
