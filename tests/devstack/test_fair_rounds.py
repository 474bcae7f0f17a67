"""The dev stack's pollers let tenants take turns: a received batch holding several tenants'
messages (their MessageGroupId) is handed to the handler in rounds, so one tenant's burst does
not get ahead of another tenant's one job. On AWS the fair queue itself serves quieter tenants
first; moto delivers in order, so the poller does it."""

from __future__ import annotations

import json
import uuid

import boto3
import pytest

from shared.devstack.pollers import SqsPoller, fair_rounds
from tests.devstack.test_pollers import Recorder


def message(tenant: str | None, n: int) -> dict:
    attributes = {"MessageGroupId": tenant} if tenant else {}
    return {"MessageId": f"{tenant}-{n}", "Attributes": attributes}


def ids(rounds: list[list[dict]]) -> list[list[str]]:
    return [[m["MessageId"] for m in turn] for turn in rounds]


def test_one_tenants_batch_is_handed_over_whole():
    batch = [message("a", i) for i in range(10)]
    assert fair_rounds(batch) == [batch]


def test_messages_without_a_group_are_handed_over_whole():
    batch = [message(None, i) for i in range(4)]
    assert fair_rounds(batch) == [batch]


def test_a_quiet_tenants_job_goes_in_the_first_round_ahead_of_the_rest_of_a_burst():
    # GIVEN a batch of nine of A's messages, then B's one
    batch = [message("a", i) for i in range(9)] + [message("b", 0)]
    # THEN the first round takes A's even share (half the batch) and B's job, taking turns
    assert ids(fair_rounds(batch)) == [
        ["a-0", "b-0", "a-1", "a-2", "a-3", "a-4"],
        ["a-5", "a-6", "a-7", "a-8"],
    ]


def test_tenants_within_their_share_go_in_one_round_taking_turns():
    batch = [message("a", 0), message("a", 1), message("b", 0), message("c", 0), message("b", 1)]
    assert ids(fair_rounds(batch)) == [["a-0", "b-0", "c-0"], ["a-1", "b-1"]]


def test_every_message_is_handed_over_once():
    batch = [message(t, i) for t, n in (("a", 6), ("b", 3), ("c", 1)) for i in range(n)]
    rounds = fair_rounds(batch)
    assert sorted(m["MessageId"] for turn in rounds for m in turn) == sorted(m["MessageId"] for m in batch)
    assert ids(rounds)[0] == ["a-0", "b-0", "c-0", "a-1", "b-1", "a-2", "b-2"]


@pytest.fixture
def sqs(aws):
    return boto3.session.Session().client("sqs", region_name=aws.region, endpoint_url=aws.endpoint_url)


def test_the_poller_hands_a_quiet_tenants_job_over_before_the_rest_of_a_burst(sqs):
    # GIVEN a queue holding nine of tenant A's job messages, then tenant B's one
    url = sqs.create_queue(QueueName=f"fair-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    sqs.send_message_batch(QueueUrl=url, Entries=[
        {"Id": str(i), "MessageBody": json.dumps({"job_id": f"a-{i}"}), "MessageGroupId": "tenant-a"} for i in range(9)
    ] + [{"Id": "9", "MessageBody": json.dumps({"job_id": "b-0"}), "MessageGroupId": "tenant-b"}])
    handler = Recorder()
    poller = SqsPoller(url, handler, function_name="test-fn", sqs=sqs)
    # WHEN the poller receives them (moto hands over all ten at once) and hands them over
    poller.start()
    try:
        handler.wait_for(lambda h: len(h.records) == 10)
    finally:
        poller.stop()
    # THEN B's job was in the first handler call, with only A's share of the batch beside it
    first, second = ([json.loads(r["body"])["job_id"] for r in event["Records"]] for event, _ in handler.calls)
    assert "b-0" in first and len(first) == 6 and second == ["a-5", "a-6", "a-7", "a-8"]
    # AND each record still carries its group as Lambda passes it on
    assert {r["attributes"]["MessageGroupId"] for event, _ in handler.calls for r in event["Records"]} == {"tenant-a", "tenant-b"}
