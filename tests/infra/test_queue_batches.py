"""Queue sends in batches: messages sent together go out in SendMessageBatch calls of up to ten,
and each sender still learns whether its own message is on the queue (the real moto queues of the
session fixture)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from shared.adapters import queues
from shared.adapters.aws import client
from shared.errors import ServiceUnavailable

SENDERS = 20


@pytest.fixture
def fresh_queue():
    sqs = client("sqs")
    url = sqs.create_queue(QueueName=f"batches-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    yield url
    try:
        sqs.delete_queue(QueueUrl=url)
    except sqs.exceptions.QueueDoesNotExist:
        pass


class _HeldCalls:
    """The sender's SQS calls (``queues.sqs_calls``), each SendMessageBatch counted and held
    until every sender has queued its message, then made."""

    def __init__(self, calls, counted: list[int], everyone_queued: threading.Event) -> None:
        self._calls, self._counted, self._everyone_queued = calls, counted, everyone_queued

    def send_message_batch(self, **params):
        self._counted.append(len(params["Entries"]))
        self._everyone_queued.wait(timeout=120)
        return self._calls.send_message_batch(**params)


@pytest.fixture
def batch_calls(monkeypatch):
    """The SendMessageBatch calls made, each held until every sender has queued its message
    (so the test does not depend on how fast threads start on this machine), and the messages
    handed to the sender so far."""
    calls: list[int] = []
    everyone_queued = threading.Event()
    real = queues.sqs_calls
    monkeypatch.setattr(queues, "sqs_calls", lambda: _HeldCalls(real(), calls, everyone_queued))
    made: list[int] = []

    class Counted(queues._Outgoing):  # made by the sender's send(), the line before it queues it
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(1)

    monkeypatch.setattr(queues, "_Outgoing", Counted)
    yield calls, everyone_queued, made


def _drain(queue_url: str) -> list[str]:
    sqs, bodies = client("sqs"), []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        got = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get("Messages", [])
        if not got:
            return bodies
        bodies += [m["Body"] for m in got]
        sqs.delete_message_batch(QueueUrl=queue_url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)])
    return bodies


def _send_together(send, count: int, batch_calls) -> list:
    """``count`` threads calling ``send(i)`` at once; each one's exception or None. The first
    SendMessageBatch is let through once every message has been handed to the sender (however
    long the threads take to get there on this machine)."""
    _, everyone_queued, made = batch_calls
    started = threading.Barrier(count + 1)

    def one(i):
        started.wait()
        try:
            send(i)
        except Exception as exc:
            return exc
        return None

    with ThreadPoolExecutor(count) as pool:
        futures = [pool.submit(one, i) for i in range(count)]
        started.wait()
        deadline = time.monotonic() + 60
        while len(made) < count:
            assert time.monotonic() < deadline, f"only {len(made)} of {count} messages handed to the sender"
            time.sleep(0.01)
        everyone_queued.set()
        return [f.result(timeout=60) for f in futures]


def test_twenty_jobs_queued_at_once_all_arrive_in_fewer_calls(configure, fresh_queue, batch_calls):
    # GIVEN a jobs queue and 20 requests queueing their jobs at the same moment
    calls, _, _ = batch_calls
    configure(jobs_queue_url=fresh_queue)
    job_ids = [uuid.uuid4() for _ in range(SENDERS)]

    # WHEN each one enqueues its job
    errors = _send_together(lambda i: queues.enqueue_job(job_ids[i]), SENDERS, batch_calls)

    # THEN every call returned only once its message was accepted
    assert errors == [None] * SENDERS
    # AND every job's message is on the queue, once
    assert sorted(json.loads(b)["job_id"] for b in _drain(fresh_queue)) == sorted(str(j) for j in job_ids)
    # AND they went out in batches of at most ten, in fewer calls than messages
    assert sum(calls) == SENDERS
    assert max(calls) <= 10
    assert len(calls) < SENDERS


def test_a_queue_that_refuses_fails_every_sender(configure, fresh_queue, batch_calls):
    # GIVEN a jobs queue that no longer exists
    client("sqs").delete_queue(QueueUrl=fresh_queue)
    configure(jobs_queue_url=fresh_queue)

    # WHEN 20 requests enqueue their jobs at once
    errors = _send_together(lambda i: queues.enqueue_job(uuid.uuid4()), SENDERS, batch_calls)

    # THEN each one is told the queue is not available
    assert all(isinstance(e, ServiceUnavailable) and e.message == "Job queue is not available" for e in errors), errors


def test_a_lone_message_is_sent_without_waiting_for_company(configure, fresh_queue):
    # GIVEN one job queued on its own
    configure(jobs_queue_url=fresh_queue)
    job_id = uuid.uuid4()

    # WHEN it is enqueued, THEN it is on the queue when the call returns
    queues.enqueue_job(job_id)
    assert [json.loads(b)["job_id"] for b in _drain(fresh_queue)] == [str(job_id)]
