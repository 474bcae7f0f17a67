"""Queue message bodies: ``{"job_id": "<uuid>"}``."""

from __future__ import annotations

import json
import logging
import uuid

log = logging.getLogger(__name__)


def job_id_from(body: str) -> uuid.UUID | None:
    """The job id in a message body, or None (logged) when the body is not a job message."""
    try:
        return uuid.UUID(str(json.loads(body)["job_id"]))
    except (ValueError, KeyError, TypeError):
        log.error("dropping a malformed queue message")
        return None
