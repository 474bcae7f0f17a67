"""Brakes on consumers: requests per API key in a window, and unfinished jobs per tenant.

On by default with production values (``SHEETCALC_CONSUMER_RATE_LIMIT``, 600 a minute per key;
``SHEETCALC_TENANT_MAX_UNFINISHED_JOBS``, 1,000 jobs of execute and test-execute;
``SHEETCALC_TENANT_MAX_UNFINISHED_BATCH_JOBS``, 10,000 jobs of batches; 0 turns one off). The rate
limit counts every request whose key is valid, in fixed windows of ``consumer_rate_window_seconds``
aligned on the clock; the count lives in the database (``throttle_counters``), so it holds across
API processes and Lambdas. With ``consumer_rate_lease`` above 1 (default 1), an API process
reserves a key's requests that many at a time (at most a twentieth of the limit) with one counter
write and hands them out in order from memory: in one process the count stays exact; across
several, requests another process reserved and did not use are lost to the window, so a key may
be refused early by up to a lease per process, never allowed more than its limit. Once the
database count has reached the limit, the rest of the window is refused without writing. A tenant's batches have a quota of their own, room for one batch of the
largest size: a batch running does not refuse the tenant's executes, and a burst of executes does
not refuse its batch.
"""

from __future__ import annotations

import threading
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


@dataclass
class _Lease:
    """A key's requests this process reserved in one window: positions ``next``..``last`` in the
    window's count (the database's count is ``last`` or more)."""

    window: tuple[datetime, int, int]  # (window start, limit, window seconds): a new setting starts afresh
    next: int
    last: int
    expires_at: datetime


_leases: dict[str, _Lease] = {}
_leases_lock = threading.Lock()
_MAX_LEASES = 10_000


def forget_leases() -> None:
    """Drop this process's reserved requests (tests that rewrite the counters' table)."""
    with _leases_lock:
        _leases.clear()


def _from_lease(key: str, window: tuple[datetime, int, int]) -> tuple[int, datetime] | None:
    """The next position reserved for ``key`` in ``window``, or past the limit once the count
    has reached it; None when a counter write is needed."""
    with _leases_lock:
        lease = _leases.get(key)
        if lease is None or lease.window != window:
            return None
        if lease.next <= lease.last or lease.last >= window[1]:
            position = lease.next
            lease.next += 1
            return position, lease.expires_at
        return None


def count_request(session: Session, *, key: str) -> Allowance | None:
    """Count one request of the API key named ``key``; None when there is no rate limit."""
    settings = get_settings()
    limit = settings.consumer_rate_limit
    if not limit:
        return None
    window_seconds = settings.consumer_rate_window_seconds
    now = utcnow()
    started = datetime.fromtimestamp(now.timestamp() // window_seconds * window_seconds, tz=timezone.utc)
    window = (started, limit, window_seconds)
    reserved = _from_lease(key, window)
    if reserved is None:
        amount = max(1, min(settings.consumer_rate_lease, limit // 20))
        counted = repo.add(
            session, key=f"rate:{key}", now=now, started_at=started,
            expires_at=started + timedelta(seconds=window_seconds), extend=False, amount=amount,
        )
        # Committed at once: the request counts whatever becomes of it, and the counter's row is
        # not held while the request goes on.
        session.commit()
        first = counted.count - amount + 1
        with _leases_lock:
            if len(_leases) >= _MAX_LEASES:
                _leases.clear()
            _leases[key] = _Lease(window=window, next=first + 1, last=counted.count, expires_at=counted.expires_at)
        reserved = first, counted.expires_at
    position, expires_at = reserved
    reset = repo.Count(count=position, expires_at=expires_at).seconds_left(now)
    return Allowance(limit=limit, remaining=max(0, limit - position), reset_seconds=reset, exceeded=position > limit)


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
