"""Message queues (SQS). Messages carry ids, never objects.

Sends are batched: one sender thread per process sends what is waiting at once, and the messages
that came while a batch was in flight go together in the next, in SendMessageBatch calls of up to
ten per queue (no timer: a lone message is sent at once, and a busy process batches by itself).
Each caller still waits until its own message was accepted, and gets ``ServiceUnavailable`` if it
was not, exactly as with one SendMessage per message: "sent" still means "on the queue".

A job's message (and a batch chunk's) carries its tenant as ``MessageGroupId``: on a standard
queue that makes it an SQS fair queue, which delivers the messages of quiet tenants first while
one tenant holds a disproportionate share of the messages in flight (order and throughput are
otherwise those of a standard queue; moto, the dev stack's SQS, accepts and keeps the id too).
"""

from __future__ import annotations

import json
import logging
import os
import queue as stdlib_queue
import threading
from dataclasses import dataclass, field

from botocore.exceptions import ClientError

from shared.adapters.aws import sqs_calls
from shared.config import get_settings
from shared.errors import ServiceUnavailable

log = logging.getLogger(__name__)

BATCH_SIZE = 10
NOT_AVAILABLE = "Job queue is not available"


@dataclass
class _Outgoing:
    queue_url: str
    body: str
    group: str | None = None  # MessageGroupId: the tenant whose work it is (fair queues)
    delay_seconds: int = 0
    done: threading.Event = field(default_factory=threading.Event)
    accepted: bool = False
    error: BaseException | None = None  # anything but SQS's own refusal, raised in the caller


class _BatchSender:
    """The process's sender thread and the messages waiting for it."""

    def __init__(self) -> None:
        self._waiting: stdlib_queue.SimpleQueue[_Outgoing] = stdlib_queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="sqs-batch-sender", daemon=True)
        self._thread.start()

    def send(self, queue_url: str, body: str, *, group: str | None = None, delay_seconds: int = 0) -> bool:
        """Queue one message and wait until SQS accepted or refused it (True when accepted)."""
        outgoing = _Outgoing(queue_url, body, group, delay_seconds)
        self._waiting.put(outgoing)
        outgoing.done.wait()
        if outgoing.error is not None:
            raise outgoing.error
        return outgoing.accepted

    def _gather(self) -> list[_Outgoing]:
        # What is waiting now, without waiting for more: a timed wait for company cost a lone
        # message its latency and, under load, the process CPU in wake-ups (issue 15 figures).
        batch = [self._waiting.get()]
        while True:
            try:
                batch.append(self._waiting.get_nowait())
            except stdlib_queue.Empty:
                return batch

    def _run(self) -> None:
        while True:
            gathered = self._gather()
            by_queue: dict[str, list[_Outgoing]] = {}
            for outgoing in gathered:
                by_queue.setdefault(outgoing.queue_url, []).append(outgoing)
            for queue_url, messages in by_queue.items():
                for start in range(0, len(messages), BATCH_SIZE):
                    _send_batch(queue_url, messages[start:start + BATCH_SIZE])


def _send_batch(queue_url: str, messages: list[_Outgoing]) -> None:
    """One SendMessageBatch; mark each message accepted or not, then wake its caller."""
    try:
        answer = sqs_calls().send_message_batch(QueueUrl=queue_url, Entries=[_entry(i, m) for i, m in enumerate(messages)])
        for entry in answer.get("Successful", []):
            messages[int(entry["Id"])].accepted = True
        for entry in answer.get("Failed", []):
            log.error("SQS refused a message: %s %s", entry.get("Code"), entry.get("Message"))
    except ClientError:
        log.exception("SendMessageBatch to %s failed", queue_url)
    except Exception as exc:  # as SendMessage's would have: raised to each caller, none left waiting
        for message in messages:
            message.error = exc
    finally:
        for message in messages:
            message.done.set()


def _entry(i: int, message: _Outgoing) -> dict:
    entry = {"Id": str(i), "MessageBody": message.body}
    if message.group:
        entry["MessageGroupId"] = message.group
    if message.delay_seconds:
        entry["DelaySeconds"] = message.delay_seconds
    return entry


_sender: _BatchSender | None = None
_sender_pid: int | None = None
_sender_lock = threading.Lock()


def _batch_sender() -> _BatchSender:
    """This process's sender (a forked child starts its own: threads do not survive a fork)."""
    global _sender, _sender_pid
    with _sender_lock:
        if _sender is None or _sender_pid != os.getpid():
            _sender, _sender_pid = _BatchSender(), os.getpid()
        return _sender


def _send(queue_url: str | None, body: dict, *, group=None, delay_seconds: int = 0) -> None:
    if not queue_url:
        raise ServiceUnavailable("Job queue is not configured")
    if not _batch_sender().send(queue_url, json.dumps(body), group=str(group) if group else None, delay_seconds=delay_seconds):
        raise ServiceUnavailable(NOT_AVAILABLE)


def enqueue_job(job_id, *, tenant_id=None, delay_seconds: int = 0, lane: str = "standard") -> None:
    """Ask a worker to compute ``job_id`` (its tenant's message group, ``delay_seconds`` from now:
    at most 900, SQS's limit), on its version's lane: the slow lane's own queue when it has one."""
    _send(_jobs_queue(lane), {"job_id": str(job_id)}, group=tenant_id, delay_seconds=delay_seconds)


def enqueue_batch_chunk(batch_id, chunk: int, *, tenant_id=None, lane: str = "standard", delay_seconds: int = 0) -> None:
    """Ask a worker to compute one chunk of a batch's jobs (shared.services.batch_runner), on its
    version's lane, ``delay_seconds`` from now (a chunk whose tenant had no room: fair_claims)."""
    _send(_jobs_queue(lane), {"batch_id": str(batch_id), "chunk": chunk}, group=tenant_id, delay_seconds=delay_seconds)


def enqueue_replay(replay_id, *, tenant_id=None, delay_seconds: int = 0, lane: str = "standard") -> None:
    """Ask a worker to go on with a shadow replay (shared.services.replay_runner), on its
    candidate version's lane, ``delay_seconds`` from now."""
    _send(_jobs_queue(lane), {"replay_id": str(replay_id)}, group=tenant_id, delay_seconds=delay_seconds)


def lane_of(queue_arn: str | None) -> str:
    """The lane a message came on, from its queue's ARN: "slow" for the slow lane's queue."""
    slow = get_settings().slow_jobs_queue_url
    if slow and queue_arn and queue_arn.rsplit(":", 1)[-1] == slow.rstrip("/").rsplit("/", 1)[-1]:
        return "slow"
    return "standard"


def _jobs_queue(lane: str) -> str | None:
    """The jobs queue of a lane: the slow lane's own when it has one, else the jobs queue."""
    settings = get_settings()
    return settings.slow_jobs_queue_url if lane == "slow" and settings.slow_jobs_queue_url else settings.jobs_queue_url


def enqueue_version_check(version_id) -> None:
    """Ask the checks function for a new version's background work: the slower engines' checks,
    the copy to the tenant's document library. Its own queue: no job waits behind a check."""
    _send(get_settings().checks_queue_url, {"version_id": str(version_id)})


def enqueue_webhook(job_id) -> None:
    """Ask the webhook function to deliver ``job_id``'s result."""
    _send(get_settings().webhooks_queue_url, {"job_id": str(job_id)})


def enqueue_webhook_redelivery(attempt_id) -> None:
    """Ask the webhook function to make a redelivery an administrator requested (its log row's id)."""
    _send(get_settings().webhooks_queue_url, {"webhook_attempt_id": str(attempt_id)})
