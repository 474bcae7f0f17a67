"""Queue message bodies. Messages carry ids, never objects.

The jobs queue carries ``{"job_id": "<uuid>"}`` (compute a job); the checks queue carries
``{"version_id": "<uuid>"}`` (a new version's background work: slower engine checks, the copy to
the document library); the webhooks queue carries ``{"job_id"}`` (a finished job's webhook) or
``{"webhook_attempt_id"}`` (a redelivery an administrator asked for). The jobs queue also carries
``{"batch_id": "<uuid>", "chunk": n}``: the n-th chunk of a batch's jobs (shared.services.batch_runner),
and ``{"replay_id": "<uuid>"}``: a shadow replay to go on with (shared.services.replay_runner).
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass

log = logging.getLogger(__name__)

KINDS = {"job_id": "job", "version_id": "version_check", "webhook_attempt_id": "webhook_redelivery", "batch_id": "batch_chunk",
         "replay_id": "replay"}


@dataclass(frozen=True)
class Message:
    kind: str  # "job", "version_check", "webhook_redelivery", "batch_chunk" or "replay"
    id: uuid.UUID
    chunk: int = 0  # a batch_chunk's chunk number


def parse(body: str) -> Message | None:
    """The message in a body, or None (logged) when it is none of ours."""
    try:
        data = json.loads(body)
        key = next(k for k in KINDS if k in data)
        chunk = data.get("chunk", 0) if key == "batch_id" else 0
        if type(chunk) is not int or chunk < 0:
            raise ValueError("chunk")
        return Message(KINDS[key], uuid.UUID(str(data[key])), chunk)
    except (ValueError, TypeError, StopIteration, AttributeError):
        log.error("dropping a malformed queue message")
        return None


def job_id_from(body: str) -> uuid.UUID | None:
    """The job id in a job message, or None (logged) when the body is not one."""
    return _id_of_kind(body, "job")


def version_id_from(body: str) -> uuid.UUID | None:
    """The version id in a version-check message, or None (logged) when the body is not one."""
    return _id_of_kind(body, "version_check")


def _id_of_kind(body: str, kind: str) -> uuid.UUID | None:
    message = parse(body)
    if message is None or message.kind != kind:
        if message is not None:
            log.error("dropping a queue message that names no %s", kind.replace("_", " "))
        return None
    return message.id
