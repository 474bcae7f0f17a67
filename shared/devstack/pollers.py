"""``SqsPoller``: what a Lambda SQS event source mapping does, as a thread on one machine.

It long-polls one queue, hands each batch to a Lambda handler as an ``aws:sqs`` event with a
Lambda-shaped context, and then deletes the records the handler did not report in
``batchItemFailures`` (``ReportBatchItemFailures``). A handler that raises fails the whole batch:
nothing is deleted and SQS redelivers it after the visibility timeout.

Deleting: with ``delete_delay_seconds`` (the jobs queue in ``sheetcalc dev``), handled messages are
deleted by a thread of the poller's own, gathered for up to that long (or until ten are waiting)
into one ``DeleteMessageBatch``. Under load the poller picks most jobs up one or two at a time, and
one delete call per batch was a fifth of the worker processes' CPU and as much again in the local
SQS; gathered, it is a call per several batches. A message stays in flight that much longer; one
whose delete a kill loses comes back after the visibility timeout and is acknowledged again
(a job is claimed once: ``jobs.claim_many``). ``finish()`` deletes what is waiting.

Gathering (``gather_seconds``; the jobs queue in ``sheetcalc dev``): after a batch of more than one
message but less than a full one, a sign that jobs arrive faster than one at a time, the poller
waits that long before its next receive, so the next batch is fuller: fewer receives and deletes
per job, and one claim and one finish for more jobs. Lambda's ``MaximumBatchingWindowInSeconds``
does the same for every batch; here a lone job (a single message) is still picked up at once.

Tenants take turns (``fair_rounds``): a job's message carries its tenant as ``MessageGroupId``
(``shared.adapters.queues``). On AWS the queue is then an SQS fair queue, which delivers quieter
tenants' messages first; moto delivers in order. So when a received batch holds several tenants'
messages, it is handed over in rounds, each taking from every tenant at most its even share of
the batch, round-robin: a tenant's one job goes in the first round, ahead of the rest of another
tenant's burst (whose jobs are calculated, and finished, one round later). A batch of one
tenant's messages, or of messages without a group, is handed over whole, as before.

Polling: moto's ``ReceiveMessage`` long poll waits on a condition that ``SendMessage`` notifies,
so it answers as soon as a message arrives (pickup in a few ms). A short ``WaitTimeSeconds`` (1)
keeps that and lets ``stop()`` finish within about a second; idle cost is one request a second.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import boto3

from shared.adapters.sqs_json import SqsCalls

log = logging.getLogger(__name__)

Handler = Callable[[dict, Any], Any]

# SQS takes at most this many messages per ReceiveMessage and per DeleteMessageBatch.
SQS_BATCH_LIMIT = 10
# After an error talking to SQS, wait this long before polling again (no busy loop).
_ERROR_BACKOFF_SECONDS = 1.0


@dataclass
class LambdaContext:
    """The attributes of the Python runtime's context object that handlers and powertools read."""

    function_name: str
    invoked_function_arn: str
    memory_limit_in_mb: int
    timeout_seconds: float
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    function_version: str = "$LATEST"
    identity: Any = None
    client_context: Any = None
    _deadline: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        self.log_group_name = f"/aws/lambda/{self.function_name}"
        self.log_stream_name = time.strftime("%Y/%m/%d/[$LATEST]") + uuid.uuid4().hex
        self._deadline = time.monotonic() + self.timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left before Lambda would stop this invocation."""
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def _message_attribute(value: dict) -> dict:
    binary = value.get("BinaryValue")
    return {
        "stringValue": value.get("StringValue"),
        "binaryValue": base64.b64encode(binary).decode() if binary is not None else None,
        "stringListValues": list(value.get("StringListValues", [])),
        "binaryListValues": [base64.b64encode(b).decode() for b in value.get("BinaryListValues", [])],
        "dataType": value.get("DataType", "String"),
    }


def to_record(message: dict, *, queue_arn: str, region: str) -> dict:
    """One ``ReceiveMessage`` message as a record of a Lambda SQS event."""
    record = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message.get("Body", ""),
        "attributes": dict(message.get("Attributes", {})),
        "messageAttributes": {
            name: _message_attribute(value) for name, value in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }
    if "MD5OfMessageAttributes" in message:
        record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
    return record


def fair_rounds(messages: list[dict]) -> list[list[dict]]:
    """``messages`` as the handler is given them: in rounds while two or more tenants (message
    groups) have some left, each round taking up to ``len(messages) // tenants`` of each, one
    tenant after another; what is left of the last tenant in one last round."""
    groups: dict[str | None, list[dict]] = {}
    for message in messages:
        groups.setdefault(message.get("Attributes", {}).get("MessageGroupId"), []).append(message)
    if len(groups) < 2:
        return [messages]
    share = max(1, len(messages) // len(groups))
    left = list(groups.values())
    rounds: list[list[dict]] = []
    while sum(1 for waiting in left if waiting) > 1:
        taken = [waiting[:share] for waiting in left]
        left = [waiting[share:] for waiting in left]
        rounds.append([turn[i] for i in range(share) for turn in taken if i < len(turn)])
    rest = [message for waiting in left for message in waiting]
    return rounds + [rest] if rest else rounds


def failed_message_ids(response: Any, batch_ids: list[str]) -> set[str]:
    """The ids Lambda would retry given the handler's ``response``, as AWS documents it.

    No ``batchItemFailures`` means every record succeeded; an identifier that is missing, empty
    or not in the batch makes Lambda treat the whole batch as failed.
    """
    if not isinstance(response, dict) or response.get("batchItemFailures") is None:
        return set()
    failures = response["batchItemFailures"]
    ids = set(batch_ids)
    failed: set[str] = set()
    for item in failures if isinstance(failures, list) else [None]:
        identifier = item.get("itemIdentifier") if isinstance(item, dict) else None
        if not identifier or identifier not in ids:
            log.warning("invalid batchItemFailures entry %r: the whole batch is retried", item)
            return ids
        failed.add(identifier)
    return failed


class SqsPoller(threading.Thread):
    """Feeds one queue's messages to one Lambda handler until ``stop()``.

    One poller per handler: powertools' module-scope ``BatchProcessor`` keeps per-batch state
    and must not process two batches at once.
    """

    def __init__(self, queue_url: str, handler: Handler, *, function_name: str,
                 sqs: Any = None, endpoint_url: str | None = None, region: str | None = None,
                 batch_size: int = 10, wait_time_seconds: int = 1, timeout_seconds: float = 60.0,
                 memory_limit_in_mb: int = 1024, delete_delay_seconds: float = 0.0, gather_seconds: float = 0.0):
        super().__init__(name=f"sqs-poller-{function_name}", daemon=True)
        if not 1 <= batch_size <= SQS_BATCH_LIMIT:
            raise ValueError(f"batch_size must be between 1 and {SQS_BATCH_LIMIT}")
        self.queue_url = queue_url
        self.handler = handler
        self.function_name = function_name
        self.batch_size = batch_size
        self.wait_time_seconds = wait_time_seconds
        self.timeout_seconds = timeout_seconds
        self.memory_limit_in_mb = memory_limit_in_mb
        # Its own client: a long poll holds a pooled connection for up to wait_time_seconds.
        self._sqs = sqs or boto3.session.Session().client("sqs", region_name=region, endpoint_url=endpoint_url)
        # Receives and deletes straight to the local endpoint (shared.adapters.sqs_json).
        self._calls = SqsCalls(self._sqs)
        self.queue_arn = self._sqs.get_queue_attributes(
            QueueUrl=queue_url, AttributeNames=["QueueArn"]
        )["Attributes"]["QueueArn"]
        _, _, _, self.region, self.account_id, _ = self.queue_arn.split(":", 5)
        self._stopping = threading.Event()
        # Held while a batch is with the handler: finish() waits for it, not for a long poll.
        self._delivering = threading.Lock()
        self.delete_delay_seconds = delete_delay_seconds
        self.gather_seconds = gather_seconds
        # Handled messages not yet deleted (delete_delay_seconds > 0), and the thread deleting them.
        self._to_delete: list[dict] = []
        self._to_delete_changed = threading.Condition()
        self._deleter: threading.Thread | None = None

    def finish(self, timeout: float = 60.0) -> bool:
        """Ask the poller to end and wait only for a batch being handled (up to ``timeout`` s).

        A long poll still waiting is left to end by itself: a batch it brings after this is not
        handled (its messages come back after the visibility timeout). Returns False when a
        batch was still being handled at the timeout.
        """
        self._stopping.set()
        if threading.current_thread() is self or not self._delivering.acquire(timeout=timeout):
            return False
        self._delivering.release()
        self._end_deleter(timeout)
        return True

    def stop(self, timeout: float | None = 5.0) -> None:
        """Ask the poller to finish its current batch and end; wait up to ``timeout`` seconds."""
        self._stopping.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout)
        if not self.is_alive():
            self._end_deleter(timeout)

    def run(self) -> None:
        while not self._stopping.is_set():
            try:
                messages = self.receive()
            except Exception:
                if self._stopping.is_set():
                    break
                log.exception("%s: receiving from %s failed", self.function_name, self.queue_url)
                self._stopping.wait(_ERROR_BACKOFF_SECONDS)
                continue
            for turn in fair_rounds(messages) if messages else []:
                with self._delivering:
                    if self._stopping.is_set():
                        break  # asked to end while polling: not handed over, they come back
                    self.deliver(turn)
            if self.gather_seconds > 0 and 1 < len(messages) < self.batch_size:
                self._stopping.wait(self.gather_seconds)  # more are coming: let them gather

    def receive(self, wait_time_seconds: int | None = None) -> list[dict]:
        """One ``ReceiveMessage`` call for up to a batch, with every attribute Lambda passes on."""
        return self._calls.receive_message(
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=self.batch_size,
            WaitTimeSeconds=self.wait_time_seconds if wait_time_seconds is None else wait_time_seconds,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])

    def deliver(self, messages: list[dict]) -> None:
        """Invoke the handler with ``messages`` and delete those it did not report as failed."""
        event = {"Records": [to_record(m, queue_arn=self.queue_arn, region=self.region) for m in messages]}
        context = LambdaContext(
            function_name=self.function_name,
            invoked_function_arn=f"arn:aws:lambda:{self.region}:{self.account_id}:function:{self.function_name}",
            memory_limit_in_mb=self.memory_limit_in_mb,
            timeout_seconds=self.timeout_seconds,
        )
        try:
            response = self.handler(event, context)
        except Exception:
            log.exception("%s raised; its batch of %d comes back after the visibility timeout",
                          self.function_name, len(messages))
            return
        failed = failed_message_ids(response, [m["MessageId"] for m in messages])
        done = [m for m in messages if m["MessageId"] not in failed]
        if not done:
            return
        if self.delete_delay_seconds <= 0:
            self._delete_messages(done)
            return
        with self._to_delete_changed:
            self._to_delete.extend(done)
            if self._deleter is None:
                self._deleter = threading.Thread(target=self._delete_gathered, name=f"{self.name}-deleter", daemon=True)
                self._deleter.start()
            self._to_delete_changed.notify()

    def _delete_gathered(self) -> None:
        """The deleter thread: waits for handled messages, gives others up to ``delete_delay_seconds``
        to join them (or until ten wait), deletes them, and again, until the poller is stopped."""
        while True:
            with self._to_delete_changed:
                self._to_delete_changed.wait_for(lambda: self._to_delete or self._stopping.is_set())
                if not self._to_delete:
                    return  # stopping, nothing left
                self._to_delete_changed.wait_for(
                    lambda: len(self._to_delete) >= SQS_BATCH_LIMIT or self._stopping.is_set(), timeout=self.delete_delay_seconds
                )
            self._delete_waiting()

    def _end_deleter(self, timeout: float | None) -> None:
        """Once stopping: delete what is still waiting, wake the deleter thread and wait for its last call."""
        self._delete_waiting()
        with self._to_delete_changed:
            self._to_delete_changed.notify_all()
            deleter = self._deleter
        if deleter is not None and deleter is not threading.current_thread():
            deleter.join(timeout)

    def _delete_waiting(self) -> None:
        """Delete every handled message still waiting, in calls of up to ten."""
        with self._to_delete_changed:
            waiting, self._to_delete = self._to_delete, []
            self._to_delete_changed.notify_all()
        for start in range(0, len(waiting), SQS_BATCH_LIMIT):
            self._delete_messages(waiting[start:start + SQS_BATCH_LIMIT])

    def _delete_messages(self, messages: list[dict]) -> None:
        entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)]
        try:
            result = self._calls.delete_message_batch(QueueUrl=self.queue_url, Entries=entries)
        except Exception:
            log.exception("%s: deleting %d messages failed", self.function_name, len(entries))
            return
        for failure in result.get("Failed", []):
            log.warning("%s: could not delete a message: %s", self.function_name, failure)
