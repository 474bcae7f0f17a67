"""Batches as the consumer API shows them."""

from __future__ import annotations

from shared.api.schemas.batches import BatchAccepted, BatchCounts, BatchStatus, InvalidInputSet
from shared.services.batches import Progress


def accepted(progress: Progress) -> BatchAccepted:
    batch = progress.batch
    return BatchAccepted(
        batch_id=batch.id, message="Batch queued for processing", total=batch.total,
        jobs=batch.total - len(batch.invalid), counts=BatchCounts(**progress.counts),
        invalid=[InvalidInputSet(**item) for item in batch.invalid], created_at=batch.created_at,
    )


def status(progress: Progress) -> BatchStatus:
    batch = progress.batch
    return BatchStatus(
        batch_id=batch.id, engine_slug=batch.engine_slug, total=batch.total, counts=BatchCounts(**progress.counts),
        done=progress.done, created_at=batch.created_at, completed_at=batch.completed_at, webhook_url=batch.webhook_url,
        webhook_sent_at=batch.webhook_sent_at, webhook_response_status=batch.webhook_response_status,
    )
