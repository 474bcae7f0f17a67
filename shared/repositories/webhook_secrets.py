"""Tenants' webhook signing secrets (stored encrypted; the service encrypts and decrypts)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from shared.db.models import WebhookSigningSecret


def get(session: Session, *, tenant_id: uuid.UUID) -> WebhookSigningSecret | None:
    """The tenant's row, or None before its first secret."""
    return session.get(WebhookSigningSecret, tenant_id)


def rotate(session: Session, *, tenant_id: uuid.UUID, secret_encrypted: str, now: datetime) -> WebhookSigningSecret:
    """Make ``secret_encrypted`` current and the current one previous, in one UPDATE: the row's
    value at the time of writing moves, so concurrent rotations chain rather than lose one."""
    session.execute(
        update(WebhookSigningSecret)
        .where(WebhookSigningSecret.tenant_id == tenant_id)
        .values(
            previous_secret_encrypted=WebhookSigningSecret.secret_encrypted,
            secret_encrypted=secret_encrypted, rotated_at=now, revealed_at=now,
        )
        .execution_options(synchronize_session=False)
    )
    return session.get(WebhookSigningSecret, tenant_id, populate_existing=True)


def add_if_absent(session: Session, *, tenant_id: uuid.UUID, secret_encrypted: str) -> WebhookSigningSecret:
    """Insert the tenant's first secret; when another process did so first, theirs is kept and returned."""
    try:
        with session.begin_nested():
            session.add(WebhookSigningSecret(tenant_id=tenant_id, secret_encrypted=secret_encrypted))
    except IntegrityError:
        pass
    return get(session, tenant_id=tenant_id)
