"""Queue message bodies. Messages carry ids, never objects.

The jobs queue carries ``{"job_id": "<uuid>"}`` (compute a job) and ``{"version_id": "<uuid>"}``
(a new version's background work: slower engine checks, the copy to the document library); the webhooks queue carries ``{"job_id"}``.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass

log = logging.getLogger(__name__)

KINDS = {"job_id": "job", "version_id": "version_check"}


@dataclass(frozen=True)
class Message:
    kind: str  # "job" or "version_check"
    id: uuid.UUID


def parse(body: str) -> Message | None:
    """The message in a body, or None (logged) when it is none of ours."""
    try:
        data = json.loads(body)
        key = next(k for k in KINDS if k in data)
        return Message(KINDS[key], uuid.UUID(str(data[key])))
    except (ValueError, TypeError, StopIteration, AttributeError):
        log.error("dropping a malformed queue message")
        return None


def job_id_from(body: str) -> uuid.UUID | None:
    """The job id in a job message, or None (logged) when the body is not one."""
    message = parse(body)
    if message is None or message.kind != "job":
        if message is not None:
            log.error("dropping a queue message that names no job")
        return None
    return message.id
