"""SqsPoller against a real moto server, with plain functions as the Lambda handlers."""

from __future__ import annotations

import threading
import time
import uuid

import boto3
import pytest

from shared.devstack.local_aws import create_queue_with_dlq
from shared.devstack.pollers import SqsPoller
from tests.sqs_direct import record_direct_answers


class Recorder:
    """A Lambda handler that records what it was given and answers as told."""

    def __init__(self, answer=None):
        self.answer = answer or (lambda event: {"batchItemFailures": []})
        self.calls: list[tuple[dict, object]] = []
        self.called = threading.Condition()

    def __call__(self, event, context):
        with self.called:
            self.calls.append((event, context))
            self.called.notify_all()
        return self.answer(event)

    @property
    def records(self) -> list[dict]:
        return [record for event, _ in self.calls for record in event["Records"]]

    def wait_for(self, predicate, timeout: float = 60.0) -> None:  # only a hung poller reaches it
        with self.called:
            assert self.called.wait_for(lambda: predicate(self), timeout), f"timed out; got {self.calls}"


@pytest.fixture
def sqs(aws):
    return boto3.session.Session().client("sqs", region_name=aws.region, endpoint_url=aws.endpoint_url)


# How long a received message stays hidden: retries come back after it, so it is short, but a
# handled message must be deleted within it or it comes back too; 3 s leaves a loaded machine room.
RETRY_AFTER_S = 3


@pytest.fixture
def queue(sqs) -> tuple[str, str]:
    """A fresh queue (a short visibility timeout, so retries come back quickly) and its DLQ."""
    return create_queue_with_dlq(sqs, f"test-{uuid.uuid4().hex[:12]}", visibility_timeout=RETRY_AFTER_S)


@pytest.fixture
def patient_queue(sqs) -> tuple[str, str]:
    """A fresh queue whose messages never come back during a test, however slow the machine."""
    return create_queue_with_dlq(sqs, f"test-{uuid.uuid4().hex[:12]}", visibility_timeout=600)


@pytest.fixture
def sqs_calls(sqs, monkeypatch) -> list[str]:
    """The names of the SQS calls made from now on: through the client, or answered on the
    pollers' direct path to the local endpoint (shared.adapters.sqs_json)."""
    calls: list[str] = []
    sqs.meta.events.register("before-call.sqs.*", lambda model, **_: calls.append(model.name))
    return record_direct_answers(monkeypatch, calls)


@pytest.fixture
def start_poller(aws, sqs):
    started: list[SqsPoller] = []

    def start(queue_url: str, handler, **options) -> SqsPoller:
        poller = SqsPoller(queue_url, handler, function_name="test-fn", sqs=sqs, **options)
        poller.start()
        started.append(poller)
        return poller

    yield start
    for poller in started:
        poller.stop()


def queue_counts(sqs, url: str) -> tuple[int, int]:
    attributes = sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]), int(attributes["ApproximateNumberOfMessagesNotVisible"])


def wait_until(condition, timeout: float = 60.0) -> None:  # only a hung poller reaches it
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_delivers_a_lambda_shaped_event_and_deletes_what_succeeded(sqs, queue, start_poller):
    # GIVEN a queue with one message carrying an attribute
    url, _ = queue
    sent = sqs.send_message(
        QueueUrl=url, MessageBody='{"job_id": "j-1"}',
        MessageAttributes={"kind": {"DataType": "String", "StringValue": "job"}},
    )
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    handler = Recorder()

    # WHEN a poller feeds the queue to the handler
    start_poller(url, handler)
    handler.wait_for(lambda h: len(h.records) == 1)

    # THEN the handler got one SQS record shaped as Lambda shapes it, and a Lambda context
    event, context = handler.calls[0]
    (record,) = event["Records"]
    assert record["messageId"] == sent["MessageId"]
    assert record["body"] == '{"job_id": "j-1"}'
    assert record["receiptHandle"]
    assert record["md5OfBody"] == sent["MD5OfMessageBody"]
    assert record["eventSource"] == "aws:sqs"
    assert record["eventSourceARN"] == arn
    assert record["awsRegion"] == "us-east-1"
    assert record["attributes"]["ApproximateReceiveCount"] == "1"
    for name in ("SentTimestamp", "ApproximateFirstReceiveTimestamp"):
        assert record["attributes"][name].isdigit()
    assert record["messageAttributes"]["kind"]["stringValue"] == "job"
    assert record["messageAttributes"]["kind"]["dataType"] == "String"
    assert context.function_name == "test-fn"
    assert context.invoked_function_arn.startswith("arn:aws:lambda:us-east-1:")
    assert context.memory_limit_in_mb > 0
    assert uuid.UUID(context.aws_request_id)
    assert 0 < context.get_remaining_time_in_millis() <= 60_000
    # AND the message that succeeded is gone from the queue
    wait_until(lambda: queue_counts(sqs, url) == (0, 0))


def test_context_is_enough_for_powertools_logger(sqs, queue, start_poller, capsys):
    from aws_lambda_powertools import Logger

    logger = Logger(service="devstack-test")

    @logger.inject_lambda_context
    def handler(event, context):
        logger.info("got batch")
        return {"batchItemFailures": []}

    recorder = Recorder(answer=lambda event: handler(event, recorder.calls[-1][1]))
    url, _ = queue
    sqs.send_message(QueueUrl=url, MessageBody="x")
    start_poller(url, recorder)
    wait_until(lambda: queue_counts(sqs, url) == (0, 0))
    assert '"function_name":"test-fn"' in capsys.readouterr().out.replace(" ", "")


def test_reported_failures_come_back_and_the_rest_are_deleted(sqs, queue, start_poller):
    # GIVEN three messages, and a handler that reports "bad" as failed until its third try
    url, _ = queue
    for body in ("good-1", "bad", "good-2"):
        sqs.send_message(QueueUrl=url, MessageBody=body)

    def answer(event):
        failures = [
            {"itemIdentifier": r["messageId"]} for r in event["Records"]
            if r["body"] == "bad" and r["attributes"]["ApproximateReceiveCount"] != "3"
        ]
        return {"batchItemFailures": failures}

    handler = Recorder(answer)

    # WHEN the poller runs
    start_poller(url, handler, batch_size=10)

    # THEN "bad" is delivered again (with a growing receive count) until it succeeds,
    # while each good message is delivered exactly once
    handler.wait_for(lambda h: sum(r["body"] == "bad" for r in h.records) == 3)
    bodies = [r["body"] for r in handler.records]
    assert bodies.count("good-1") == bodies.count("good-2") == 1
    receive_counts = [r["attributes"]["ApproximateReceiveCount"] for r in handler.records if r["body"] == "bad"]
    assert receive_counts == ["1", "2", "3"]
    wait_until(lambda: queue_counts(sqs, url) == (0, 0))


def test_an_invalid_failure_report_retries_the_whole_batch(sqs, queue, start_poller):
    # GIVEN a handler whose first answer names a message that is not in the batch
    url, _ = queue
    sqs.send_message(QueueUrl=url, MessageBody="only")
    handler = Recorder(lambda event: {"batchItemFailures": [{"itemIdentifier": "nope"}]}
                       if len(handler.calls) == 1 else {})

    # WHEN the poller runs
    start_poller(url, handler)

    # THEN Lambda's rule applies: the whole batch comes back, and succeeds the second time
    handler.wait_for(lambda h: len(h.records) == 2)
    wait_until(lambda: queue_counts(sqs, url) == (0, 0))


def test_a_raising_handler_keeps_the_batch_and_the_poller_alive(sqs, queue, start_poller, caplog):
    # GIVEN a handler that raises on its first call only
    url, _ = queue
    sqs.send_message(QueueUrl=url, MessageBody="flaky")

    def answer(event):
        if len(handler.calls) == 1:
            raise RuntimeError("boom")
        return {"batchItemFailures": []}

    handler = Recorder(answer)

    # WHEN the poller runs
    poller = start_poller(url, handler)

    # THEN the message is redelivered after the visibility timeout, the poller lives on,
    # and the failure was logged
    handler.wait_for(lambda h: len(h.records) == 2)
    assert [r["attributes"]["ApproximateReceiveCount"] for r in handler.records] == ["1", "2"]
    assert poller.is_alive()
    wait_until(lambda: queue_counts(sqs, url) == (0, 0))
    assert any("raised" in rec.getMessage() and rec.exc_info for rec in caplog.records)


def test_messages_that_keep_failing_end_in_the_dead_letter_queue(sqs, queue, start_poller):
    url, dlq_url = queue
    sqs.send_message(QueueUrl=url, MessageBody="poison")
    handler = Recorder(lambda event: {"batchItemFailures": [{"itemIdentifier": r["messageId"]}
                                                            for r in event["Records"]]})
    start_poller(url, handler)
    wait_until(lambda: queue_counts(sqs, dlq_url)[0] == 1)
    assert len(handler.records) == 3


def test_stop_is_prompt_while_idle(queue, start_poller):
    url, _ = queue
    poller = start_poller(url, Recorder())
    time.sleep(0.3)  # inside a long poll by now
    # THEN it ends after the current (1 s) long poll; only a poller that ignores stop() would
    # still be alive after 30 s, whatever the machine's load
    poller.stop(timeout=30)
    assert not poller.is_alive()


LONG_POLL_S = 20


def test_pickup_is_prompt(sqs, queue, start_poller):
    # GIVEN an idle poller waiting in a long poll
    url, _ = queue
    received: list[float] = []
    arrived = threading.Event()

    def handler(event, context):
        received.append(time.perf_counter())
        arrived.set()
        return {}

    start_poller(url, handler, wait_time_seconds=LONG_POLL_S)
    time.sleep(0.3)
    latencies = []
    for _ in range(10):
        arrived.clear()
        sent = time.perf_counter()
        sqs.send_message(QueueUrl=url, MessageBody="ping")
        assert arrived.wait(3 * LONG_POLL_S)  # only a lost message reaches it; the median is the verdict
        latencies.append(received[-1] - sent)
        time.sleep(0.05)
    # THEN the sending wakes the poller: the handler sees the message long before the long
    # poll would have ended (tens of milliseconds on a quiet machine; the bound leaves room
    # for a busy one, so the verdict is about what wakes the poller, not about speed)
    latencies.sort()
    assert latencies[len(latencies) // 2] < LONG_POLL_S / 4, latencies


def test_a_handled_batch_is_deleted_in_one_call(sqs, patient_queue, start_poller, sqs_calls):
    # GIVEN ten messages waiting, and a handler that reports the first record of each batch as
    # failed (on a queue that does not hand it back during the test)
    url, _ = patient_queue
    for i in range(10):
        sqs.send_message(QueueUrl=url, MessageBody=f"m{i}")
    calls = sqs_calls
    handler = Recorder(lambda event: {"batchItemFailures": [{"itemIdentifier": event["Records"][0]["messageId"]}]})

    # WHEN the poller feeds them to the handler
    start_poller(url, handler, batch_size=10)
    handler.wait_for(lambda h: len(h.records) >= 10)
    wait_until(lambda: calls.count("DeleteMessageBatch") >= len(handler.calls))

    # THEN each batch's handled messages leave the queue in one DeleteMessageBatch, never one by one
    assert calls.count("DeleteMessageBatch") == len(handler.calls)
    assert "DeleteMessage" not in calls


def test_finish_does_not_wait_for_a_long_poll_and_hands_nothing_over_after_it(sqs, queue, start_poller):
    # GIVEN an idle poller inside a 20 s long poll
    url, _ = queue
    handler = Recorder()
    poller = start_poller(url, handler, wait_time_seconds=LONG_POLL_S)
    time.sleep(0.3)

    # WHEN it is finished, and then a message arrives that its long poll receives
    assert poller.finish(timeout=30) is True
    sqs.send_message(QueueUrl=url, MessageBody="late")
    poller.join(30)

    # THEN the poller ended without handing the message over: it comes back to the queue
    assert not poller.is_alive()
    assert handler.calls == []
    wait_until(lambda: queue_counts(sqs, url) == (1, 0))


def test_finish_waits_for_the_batch_being_handled(sqs, queue, start_poller):
    # GIVEN a poller whose handler is busy with a batch
    url, _ = queue
    entered, release = threading.Event(), threading.Event()

    def handler(event, context):
        entered.set()
        assert release.wait(30)
        return {}

    poller = start_poller(url, handler)
    sqs.send_message(QueueUrl=url, MessageBody="work")
    assert entered.wait(10)

    # WHEN it is finished while the handler works
    # THEN finish reports the batch still being handled until the handler returns
    assert poller.finish(timeout=0.05) is False
    release.set()
    assert poller.finish(timeout=30) is True
    # AND the batch it finished is deleted, not redelivered
    wait_until(lambda: queue_counts(sqs, url) == (0, 0))


def test_a_message_that_arrives_while_no_long_poll_waits_is_picked_up_all_the_same(sqs, queue, start_poller):
    # GIVEN a poller whose handler is busy with a first message: no long poll of it is waiting
    # for the next send to wake it
    url, _ = queue
    busy, release = threading.Event(), threading.Event()
    bodies: list[str] = []

    def handler(event, context):
        bodies.extend(record["body"] for record in event["Records"])
        if bodies == ["first"]:
            busy.set()
            assert release.wait(30)
        return {}

    start_poller(url, handler, wait_time_seconds=LONG_POLL_S)
    sqs.send_message(QueueUrl=url, MessageBody="first")
    assert busy.wait(30)

    # WHEN the second message is sent then, and the handler is let go
    sqs.send_message(QueueUrl=url, MessageBody="second")
    release.set()

    # THEN the poller's next receive finds it at once: a missed wake-up costs no message and no
    # long-poll wait (the bound is the 20 s long poll, far above any machine's delay)
    started = time.monotonic()
    wait_until(lambda: bodies == ["first", "second"], timeout=30)
    assert time.monotonic() - started < LONG_POLL_S


def test_with_a_delete_delay_handled_batches_are_deleted_together(sqs, start_poller, sqs_calls):
    # GIVEN a poller that gathers deletions (for longer than this test takes) and ten messages
    # that arrive one at a time, each handled in a batch of its own (a queue whose visibility
    # timeout outlasts the test, so none comes back however slow the machine)
    url, _ = create_queue_with_dlq(sqs, f"test-{uuid.uuid4().hex[:12]}", visibility_timeout=600)
    calls = sqs_calls
    handler = Recorder()
    start_poller(url, handler, delete_delay_seconds=300)
    for i in range(10):
        sqs.send_message(QueueUrl=url, MessageBody=f"m{i}")
        handler.wait_for(lambda h, n=i + 1: len(h.records) == n)
    assert len(handler.calls) == 10

    # THEN the tenth makes ten waiting, and all ten leave the queue in one DeleteMessageBatch
    # (the call is noted once its answer is read, which may come just after the queue is empty)
    wait_until(lambda: queue_counts(sqs, url) == (0, 0) and "DeleteMessageBatch" in calls, timeout=60)
    assert calls.count("DeleteMessageBatch") == 1
    assert "DeleteMessage" not in calls


def test_with_a_delete_delay_a_lone_message_is_deleted_after_the_delay(sqs, patient_queue, start_poller):
    # GIVEN a poller that gathers deletions for 0.2 s (on a queue that would not hand the message
    # back before the test ends: only its deletion empties the queue)
    url, _ = patient_queue
    handler = Recorder()
    start_poller(url, handler, delete_delay_seconds=0.2)

    # WHEN one message is handled and no other follows
    sqs.send_message(QueueUrl=url, MessageBody="alone")
    handler.wait_for(lambda h: len(h.records) == 1)

    # THEN it is deleted all the same, without another message to go with it
    wait_until(lambda: queue_counts(sqs, url) == (0, 0))
    assert len(handler.records) == 1


def test_finish_deletes_the_handled_messages_still_waiting(sqs, start_poller):
    # GIVEN a poller that would wait 300 s before deleting, with three handled messages waiting
    url, _ = create_queue_with_dlq(sqs, f"test-{uuid.uuid4().hex[:12]}", visibility_timeout=600)
    handler = Recorder()
    poller = start_poller(url, handler, delete_delay_seconds=300)
    for i in range(3):
        sqs.send_message(QueueUrl=url, MessageBody=f"m{i}")
    handler.wait_for(lambda h: len(h.records) == 3)

    # WHEN it is finished
    assert poller.finish(timeout=30) is True

    # THEN they are deleted now, not after the delay, and not redelivered
    assert queue_counts(sqs, url) == (0, 0)


def test_with_gathering_jobs_that_arrive_under_load_come_in_fuller_batches(sqs, start_poller):
    # GIVEN a poller that gathers for 5 s after a batch of more than one message (far longer than
    # sending three messages takes), and two messages waiting when it starts
    url, _ = create_queue_with_dlq(sqs, f"test-{uuid.uuid4().hex[:12]}", visibility_timeout=600)
    sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"early{i}"} for i in range(2)])
    handler = Recorder()
    start_poller(url, handler, gather_seconds=5)
    handler.wait_for(lambda h: len(h.records) == 2, timeout=30)
    assert [len(event["Records"]) for event, _ in handler.calls] == [2]

    # WHEN three more arrive one at a time while it gathers
    for i in range(3):
        sqs.send_message(QueueUrl=url, MessageBody=f"late{i}")

    # THEN they are handled together, in one batch
    handler.wait_for(lambda h: len(h.records) == 5, timeout=60)
    assert [len(event["Records"]) for event, _ in handler.calls] == [2, 3]


def test_with_gathering_a_lone_message_is_still_picked_up_at_once(sqs, queue, start_poller):
    # GIVEN a poller that would gather for 300 s after a batch of several messages
    url, _ = queue
    handler = Recorder()
    start_poller(url, handler, gather_seconds=300)

    # WHEN messages arrive one at a time, each after the previous one was handled
    for i in range(3):
        sqs.send_message(QueueUrl=url, MessageBody=f"m{i}")
        # THEN each is handled without any gathering wait (the 30 s bound is far below 300 s)
        handler.wait_for(lambda h, n=i + 1: len(h.records) == n, timeout=30)
