"""A batch's progress (its jobs counted by status) and its end: marked done once none of its jobs
is pending or processing, and its single webhook sent then.

Every path that finishes a batch's job ends here: a chunk message (batch_runner), a dead-lettered
chunk, and a batch job computed or failed through its own job message (a chunk message that was
lost leaves its jobs pending; the sweeper queues each one again as a job message, and the job
path completes the batch when the last of them finishes). The webhook is reserved in the
database before the POST, so however many of these paths arrive, it goes out at most once.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from shared.db.models import Batch, JobStatus
from shared.db.session import session_scope
from shared.repositories import batches as batch_repo
from shared.services import webhooks
from shared.timestamps import iso_utc

log = logging.getLogger(__name__)

STATUSES = (JobStatus.PENDING, JobStatus.PROCESSING, JobStatus.COMPLETED, JobStatus.FAILED)


@dataclass(frozen=True)
class Progress:
    """A batch and its jobs counted by status (``invalid``: the input sets that got no job)."""

    batch: Batch
    counts: dict[str, int]

    @property
    def done(self) -> bool:
        return self.counts[JobStatus.PENDING] == 0 and self.counts[JobStatus.PROCESSING] == 0


def progress_of(session: Session, batch: Batch) -> Progress:
    """The batch's counts by status."""
    counts = batch_repo.counts(session, batch_id=batch.id)
    return Progress(batch, {**{s: counts.get(s, 0) for s in STATUSES}, "invalid": len(batch.invalid)})


def payload(batch, counts: dict[str, int]) -> dict[str, Any]:
    """The event body for a finished batch."""
    return {
        "batch_id": str(batch.id),
        "status": "completed",
        "total": batch.total,
        "counts": counts,
        "created_at": iso_utc(batch.created_at),
        "completed_at": iso_utc(batch.completed_at),
        "results_url": f"/jobs/batch/{batch.id}/results",
    }


def complete_if_done(batch_id: uuid.UUID) -> None:
    """Mark the batch done if none of its jobs is left, and then send its webhook (at most once)."""
    with session_scope() as session:
        batch_repo.complete_if_done(session, batch_id=batch_id)
    # Whoever marked it done or not: a completed batch's webhook not yet reserved is sent (a crash
    # between the two steps leaves it to the next caller, a redelivered message of its jobs).
    with session_scope() as session:
        if batch_repo.claim_webhook(session, batch_id=batch_id) is None:
            return
        batch = batch_repo.get(session, batch_id=batch_id)
        url, body, tenant_id = batch.webhook_url, payload(batch, progress_of(session, batch).counts), batch.tenant_id
    # The claim is committed before the POST: a crash after it loses the webhook, never doubles it.
    status = webhooks.post_event(url, body, tenant_id=tenant_id, event_id=batch_id)
    with session_scope() as session:
        batch_repo.record_webhook_status(session, batch_id=batch_id, status=status)


def complete_batches_of(batch_ids: Iterable[uuid.UUID | None]) -> None:
    """``complete_if_done`` for each batch some finished jobs belong to (None: not a batch's job)."""
    for batch_id in dict.fromkeys(b for b in batch_ids if b is not None):
        complete_if_done(batch_id)
