"""Webhook signatures: each tenant's signing secret, its rotation, and the signature header.

Every webhook POST carries ``Sheetcalc-Signature: t=<unix seconds>,v1=<hex>``, where the hex is
the HMAC-SHA256, keyed with the secret (its UTF-8 bytes), of ``"<t>.<raw body>"``. A tenant's
secret is made when first needed (its first webhook, or an administrator's first read) and
stored encrypted. An administrator sees it once: the first read shows it, later reads do not; a
rotation shows the new one. For 24 hours after a rotation the replaced secret signs too (a
second ``v1=``), so receivers can switch over; a second rotation within those hours drops the
oldest secret at once.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from cryptography.exceptions import InvalidTag
from sqlalchemy.orm import Session

from shared.db.models import WebhookSigningSecret
from shared.db.types import utcnow
from shared.repositories import webhook_secrets as repo
from shared.security import decrypt, encrypt

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "Sheetcalc-Signature"
JOB_ID_HEADER = "Sheetcalc-Job-Id"
ROTATION_OVERLAP = timedelta(hours=24)
SECRET_PREFIX = "whsec_"


@dataclass(frozen=True)
class SecretView:
    """What the management endpoints show: the secret only when it is being revealed."""

    secret: str | None
    created_at: datetime
    rotated_at: datetime | None
    previous_expires_at: datetime | None


def _new_secret() -> str:
    return SECRET_PREFIX + secrets.token_hex(32)


def _row(session: Session, tenant_id: uuid.UUID) -> WebhookSigningSecret:
    row = repo.get(session, tenant_id=tenant_id)
    return row if row is not None else repo.add_if_absent(session, tenant_id=tenant_id, secret_encrypted=encrypt(_new_secret()))


def _previous_expires_at(row: WebhookSigningSecret, now: datetime) -> datetime | None:
    if row.previous_secret_encrypted is None or row.rotated_at is None:
        return None
    expires = row.rotated_at + ROTATION_OVERLAP
    return expires if now < expires else None


def _view(row: WebhookSigningSecret, *, secret: str | None, now: datetime) -> SecretView:
    return SecretView(secret=secret, created_at=row.created_at, rotated_at=row.rotated_at, previous_expires_at=_previous_expires_at(row, now))


def read(session: Session, *, tenant_id: uuid.UUID, now: datetime | None = None) -> SecretView:
    """The tenant's secret (made if there is none yet), shown only the first time it is read."""
    now = now or utcnow()
    row = _row(session, tenant_id)
    shown = None
    if row.revealed_at is None:
        shown = decrypt(row.secret_encrypted)
        row.revealed_at = now
        session.flush()
    return _view(row, secret=shown, now=now)


def rotate(session: Session, *, tenant_id: uuid.UUID, now: datetime | None = None) -> SecretView:
    """A new secret, shown in the answer; the replaced one keeps signing for 24 hours."""
    now = now or utcnow()
    _row(session, tenant_id)
    fresh = _new_secret()
    row = repo.rotate(session, tenant_id=tenant_id, secret_encrypted=encrypt(fresh), now=now)
    return _view(row, secret=fresh, now=now)


def signing_secrets(session: Session, *, tenant_id: uuid.UUID, now: datetime) -> list[str]:
    """The secrets that sign a webhook sent at ``now``: the current one, then the replaced one
    while its 24 hours last. A secret that cannot be decrypted (the key changed) is left out."""
    row = _row(session, tenant_id)
    sealed = [row.secret_encrypted]
    if _previous_expires_at(row, now) is not None:
        sealed.append(row.previous_secret_encrypted)
    keys = []
    for token in sealed:
        try:
            keys.append(decrypt(token))
        except (InvalidTag, ValueError):
            log.error("a webhook signing secret of tenant %s cannot be decrypted", tenant_id)
    return keys


def signature_header(body: bytes, *, keys: list[str], timestamp: int) -> str:
    """``t=<timestamp>,v1=<hex>[,v1=<hex>]``: one HMAC-SHA256 of ``"<t>.<body>"`` per key."""
    signed = str(timestamp).encode() + b"." + body
    digests = [hmac.new(key.encode(), signed, hashlib.sha256).hexdigest() for key in keys]
    return ",".join([f"t={timestamp}", *(f"v1={digest}" for digest in digests)])
