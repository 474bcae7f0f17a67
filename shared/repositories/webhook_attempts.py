"""The webhook delivery log: one row per POST of a job's webhook (first attempt or redelivery)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from shared.db.models import WebhookAttempt
from shared.db.types import utcnow


def add(session: Session, attempt: WebhookAttempt) -> WebhookAttempt:
    """Insert an attempt (made now, or a redelivery requested for the webhook function)."""
    session.add(attempt)
    session.flush()
    return attempt


def get(session: Session, *, attempt_id: uuid.UUID) -> WebhookAttempt | None:
    """An attempt by id alone (the webhook function, which holds only the id)."""
    return session.get(WebhookAttempt, attempt_id)


def claim(session: Session, *, attempt_id: uuid.UUID) -> datetime | None:
    """Reserve a requested redelivery's single POST; returns its time, or None if already made."""
    now = utcnow()
    result = session.execute(
        update(WebhookAttempt)
        .where(WebhookAttempt.id == attempt_id, WebhookAttempt.attempted_at.is_(None))
        .values(attempted_at=now)
        .execution_options(synchronize_session=False)
    )
    return now if result.rowcount == 1 else None


def record_outcome(session: Session, *, attempt_id: uuid.UUID, **outcome) -> None:
    """Store how the POST ended: status_code, duration_ms, response_excerpt, error_class."""
    session.execute(
        update(WebhookAttempt).where(WebhookAttempt.id == attempt_id).values(**outcome).execution_options(synchronize_session=False)
    )


def list_for_job(session: Session, *, tenant_id: uuid.UUID, job_id: uuid.UUID) -> list[WebhookAttempt]:
    """A job's attempts, oldest first."""
    return list(session.scalars(
        select(WebhookAttempt)
        .where(WebhookAttempt.tenant_id == tenant_id, WebhookAttempt.job_id == job_id)
        .order_by(WebhookAttempt.requested_at, WebhookAttempt.id)
    ))
