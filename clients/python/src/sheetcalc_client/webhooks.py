"""Checking a webhook's ``Sheetcalc-Signature``, as the service signs it.

The header is ``t=<unix seconds>,v1=<hex>[,v1=<hex>]``: each ``v1`` the HMAC-SHA256, keyed with
the tenant's signing secret (its UTF-8 bytes), of ``"<t>.<raw body>"``; during a rotation the
replaced secret signs too (a second ``v1``). A webhook is genuine when any ``v1`` matches one of
the given secrets and ``t`` is within ``tolerance`` seconds of now.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Iterable
from typing import Any

from sheetcalc_client.errors import WebhookVerificationError

SIGNATURE_HEADER = "Sheetcalc-Signature"
JOB_ID_HEADER = "Sheetcalc-Job-Id"
BATCH_ID_HEADER = "Sheetcalc-Batch-Id"
DEFAULT_TOLERANCE = 300


def _parts(header: str) -> tuple[str, list[str]]:
    timestamp, signatures = "", []
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        if key == "t":
            timestamp = value.strip()
        elif key == "v1":
            signatures.append(value.strip())
    return timestamp, signatures


def signature(payload: bytes, secret: str, timestamp: int) -> str:
    """The ``v1`` hex the service sends for ``payload`` signed with ``secret`` at ``timestamp``."""
    return hmac.new(secret.encode(), str(timestamp).encode() + b"." + payload, hashlib.sha256).hexdigest()


def verify(
    payload: bytes | str, header: str | None, secret: str | Iterable[str], tolerance: float = DEFAULT_TOLERANCE,
    *, now: float | None = None,
) -> bool:
    """True when ``header`` (the ``Sheetcalc-Signature`` value) signs the raw ``payload`` with
    ``secret`` (or any of several, during a rotation) and its time is within ``tolerance`` s of
    ``now``. Compare the bytes as received, before any JSON parsing; the comparison is timing-safe."""
    if not header:
        return False
    body = payload.encode() if isinstance(payload, str) else bytes(payload)
    secrets = [secret] if isinstance(secret, str) else list(secret)
    timestamp, signatures = _parts(header)
    if not timestamp.isdigit() or not signatures:
        return False
    current = time.time() if now is None else now
    if abs(current - int(timestamp)) > tolerance:
        return False
    matched = False
    for key in secrets:
        expected = signature(body, key, int(timestamp))
        for given in signatures:
            # Every pair is compared (no early exit), each in constant time.
            matched |= hmac.compare_digest(expected.encode(), given.encode())
    return matched


def parse(
    payload: bytes | str, header: str | None, secret: str | Iterable[str], tolerance: float = DEFAULT_TOLERANCE,
    *, now: float | None = None,
) -> dict[str, Any]:
    """The webhook's JSON body once its signature is verified; ``WebhookVerificationError`` otherwise."""
    if not verify(payload, header, secret, tolerance, now=now):
        raise WebhookVerificationError("the Sheetcalc-Signature does not sign this body with the secret, or is too old")
    return json.loads(payload)
