"""The ``Idempotency-Key`` of execute and test-execute: a retried request gets the first job.

A key is the caller's (a consumer, or a version's test key) for ``LIFETIME`` after its first use:
the same key with the same request (engine or version, inputs and webhook_url, compared by a
canonical JSON digest) answers with the job that request created; with a different request it is
a 409. Concurrent requests with one key make one job: the key is bound in the transaction that
inserts the job (``bind``), and the loser reads the winner's binding (``replay``). An expired key
is free to bind again.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from shared.db.models import Job
from shared.db.types import utcnow
from shared.errors import BadRequest, Conflict
from shared.repositories import idempotency as key_repo
from shared.repositories import jobs as job_repo

LIFETIME = timedelta(hours=24)
MAX_LENGTH = 255
KEY_PATTERN = rf"[A-Za-z0-9._:\-]{{1,{MAX_LENGTH}}}"
_KEY = re.compile(KEY_PATTERN)

BAD_KEY = f"Idempotency-Key must be 1 to {MAX_LENGTH} characters: letters, digits, '-', '_', '.' or ':'"
KEY_REUSED = (
    "Idempotency-Key was already used with a different request in the last 24 hours; "
    "send a new key for a new request"
)


def clock() -> datetime:
    """Now (a test may replace it to step past a key's lifetime)."""
    return utcnow()


def check_key(key: str) -> str:
    """The key as sent, when it fits the rules; BadRequest otherwise."""
    if not _KEY.fullmatch(key):
        raise BadRequest(BAD_KEY)
    return key


def fingerprint(*, target: uuid.UUID, inputs: dict[str, Any], webhook_url: str | None) -> str:
    """The request's digest: what it runs on and what it sends, as canonical JSON."""
    canonical = json.dumps(
        {"target": str(target), "inputs": inputs, "webhook_url": webhook_url}, sort_keys=True, separators=(",", ":"), ensure_ascii=True
    )
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def replay(session: Session, *, tenant_id: uuid.UUID, caller: str, key: str, request_hash: str) -> Job | None:
    """The job a live binding of the key made for this same request; None when the key is free;
    Conflict when it was bound to another request."""
    bound = key_repo.get(session, tenant_id=tenant_id, caller=caller, key=key)
    if bound is None or bound.created_at < clock() - LIFETIME:
        return None
    if bound.request_hash != request_hash:
        raise Conflict(KEY_REUSED)
    return job_repo.get_job(session, job_id=bound.job_id)


def bind(session: Session, *, tenant_id: uuid.UUID, caller: str, key: str, request_hash: str, job_id: uuid.UUID) -> bool:
    """Bind a free (or expired) key to the job about to be inserted; False when another request
    bound it first (then ``replay`` reads that one)."""
    now = clock()
    return key_repo.bind(
        session, tenant_id=tenant_id, caller=caller, key=key, request_hash=request_hash, job_id=job_id,
        now=now, expired_before=now - LIFETIME,
    )


def release(session: Session, *, job_id: uuid.UUID) -> None:
    """Free the key bound to a job that could not be queued."""
    key_repo.unbind(session, job_id=job_id)
