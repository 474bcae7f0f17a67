"""Brakes on consumers: requests per API key in a window, and unfinished jobs per tenant.

Both are off unless configured (``SHEETCALC_CONSUMER_RATE_LIMIT``,
``SHEETCALC_TENANT_MAX_UNFINISHED_JOBS``; 0 = off). The rate limit counts every request whose key
is valid, in fixed windows of ``consumer_rate_window_seconds`` aligned on the clock; the count
lives in the database (``throttle_counters``), so it holds across API processes and Lambdas.
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
# When a tenant's quota is full: most jobs finish in 2 to 5 seconds (the spec's polling guidance).
QUOTA_RETRY_AFTER_SECONDS = 2


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


def ensure_room_for_a_job(session: Session, *, tenant_id: uuid.UUID, jobs: int = 1) -> None:
    """Refuse a new job, or ``jobs`` new jobs at once (a batch), (429) while the tenant's quota of
    jobs pending or processing has no room for them; a batch larger than the quota itself is 400."""
    limit = get_settings().tenant_max_unfinished_jobs
    if limit and jobs > limit:
        raise BadRequest(BATCH_OVER_QUOTA.format(jobs=jobs, limit=limit))
    if limit and job_repo.count_unfinished(session, tenant_id=tenant_id) + jobs > limit:
        raise TooManyRequests(TOO_MANY_JOBS.format(limit=limit), retry_after=QUOTA_RETRY_AFTER_SECONDS)
