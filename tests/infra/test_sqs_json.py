"""SQS calls straight over SQS's JSON protocol (shared/adapters/sqs_json.py) answer as the boto3
client answers the same calls, fall back to the client for whatever is not a plain success, and
are made only where the endpoint is the local plain-HTTP one (the session's moto server)."""

from __future__ import annotations

import uuid

import boto3
import pytest
from botocore.exceptions import ClientError

from shared.adapters.aws import client
from shared.adapters.sqs_json import SqsCalls
from tests.sqs_direct import record_direct_answers

ALL = {"MessageSystemAttributeNames": ["All"], "MessageAttributeNames": ["All"]}
TEXT_ATTRIBUTES = {"kind": {"DataType": "String", "StringValue": "job"}, "count": {"DataType": "Number", "StringValue": "3"}}
ATTRIBUTES = {**TEXT_ATTRIBUTES, "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01binary\xff"}}


@pytest.fixture
def queue_url():
    sqs = client("sqs")
    url = sqs.create_queue(QueueName=f"json-{uuid.uuid4().hex[:12]}", Attributes={"VisibilityTimeout": "60"})["QueueUrl"]
    yield url
    sqs.delete_queue(QueueUrl=url)


@pytest.fixture
def direct(monkeypatch) -> tuple[SqsCalls, list[str]]:
    """SqsCalls on the service's client, and the actions it answered itself (not through botocore)."""
    return SqsCalls(client("sqs")), record_direct_answers(monkeypatch, [])


def _without_metadata(answer: dict) -> dict:
    return {k: v for k, v in answer.items() if k != "ResponseMetadata"}


def test_a_batch_sent_directly_is_received_and_deleted_as_botocore_shows_it(queue_url, direct):
    calls, answered = direct
    sqs = client("sqs")

    # WHEN two messages are sent, received and deleted on the direct path
    sent = calls.send_message_batch(QueueUrl=queue_url, Entries=[
        {"Id": "a", "MessageBody": '{"job_id": "1"}', "MessageAttributes": TEXT_ATTRIBUTES},
        {"Id": "b", "MessageBody": "second"},
    ])
    received = calls.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0, **ALL)["Messages"]
    deleted = calls.delete_message_batch(QueueUrl=queue_url, Entries=[
        {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(received)])

    # THEN each call was answered without botocore
    assert answered == ["SendMessageBatch", "ReceiveMessage", "DeleteMessageBatch"]
    # AND the answers are what the client gives: ids, bodies, attributes
    assert sorted(e["Id"] for e in sent["Successful"]) == ["a", "b"] and not sent.get("Failed")
    by_body = {m["Body"]: m for m in received}
    assert set(by_body) == {'{"job_id": "1"}', "second"}
    assert by_body['{"job_id": "1"}']["MessageAttributes"]["kind"] == {"DataType": "String", "StringValue": "job"}
    assert by_body['{"job_id": "1"}']["MessageAttributes"]["count"] == {"DataType": "Number", "StringValue": "3"}
    assert by_body["second"]["Attributes"]["ApproximateReceiveCount"] == "1"
    assert sorted(e["Id"] for e in deleted["Successful"]) == ["0", "1"]

    # AND a binary attribute (bytes, which botocore encodes) is sent through botocore, and received as bytes
    calls.send_message_batch(QueueUrl=queue_url, Entries=[{"Id": "c", "MessageBody": "binary", "MessageAttributes": ATTRIBUTES}])
    assert answered == ["SendMessageBatch", "ReceiveMessage", "DeleteMessageBatch"]
    binary = calls.receive_message(QueueUrl=queue_url, WaitTimeSeconds=0, VisibilityTimeout=0, **ALL)["Messages"][0]
    assert binary["MessageAttributes"]["blob"]["BinaryValue"] == b"\x00\x01binary\xff"
    calls.delete_message_batch(QueueUrl=queue_url, Entries=[{"Id": "0", "ReceiptHandle": binary["ReceiptHandle"]}])
    assert sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=0).get("Messages", []) == []

    # AND a message sent by the client is received on the direct path exactly as the client receives one
    sqs.send_message(QueueUrl=queue_url, MessageBody="third", MessageAttributes=ATTRIBUTES)
    mine = calls.receive_message(QueueUrl=queue_url, WaitTimeSeconds=0, VisibilityTimeout=0, **ALL)["Messages"]
    theirs = _without_metadata(sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=0, **ALL))["Messages"]
    for message in (*mine, *theirs):
        message.pop("ReceiptHandle")
        message["Attributes"] = {k: v for k, v in message["Attributes"].items() if not k.startswith("Approximate")}
    assert mine == theirs


def test_a_call_the_endpoint_refuses_raises_botocore_s_error(direct):
    calls, answered = direct
    gone = client("sqs").create_queue(QueueName=f"gone-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    client("sqs").delete_queue(QueueUrl=gone)

    # WHEN a batch goes to a queue that does not exist
    with pytest.raises(ClientError) as refused:
        calls.send_message_batch(QueueUrl=gone, Entries=[{"Id": "a", "MessageBody": "x"}])

    # THEN the error is botocore's own (the call made again through the client), as before
    assert refused.value.response["Error"]["Code"] in ("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist")
    assert answered == []


def test_a_broken_kept_connection_costs_one_call_through_botocore_then_a_new_one(queue_url, direct):
    calls, answered = direct
    calls.send_message_batch(QueueUrl=queue_url, Entries=[{"Id": "a", "MessageBody": "one"}])
    # GIVEN the kept connection broken under the caller (as when the server has closed it)
    calls._connections.connection.sock.close()

    # WHEN the next calls are made
    second = calls.send_message_batch(QueueUrl=queue_url, Entries=[{"Id": "b", "MessageBody": "two"}])
    third = calls.send_message_batch(QueueUrl=queue_url, Entries=[{"Id": "c", "MessageBody": "three"}])

    # THEN the one on the broken connection went through botocore, the next on a new connection
    assert [e["Id"] for e in second["Successful"]] == ["b"] and [e["Id"] for e in third["Successful"]] == ["c"]
    assert answered == ["SendMessageBatch", "SendMessageBatch"]
    bodies = [m["Body"] for m in client("sqs").receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])]
    assert sorted(bodies) == ["one", "three", "two"]


@pytest.mark.parametrize("endpoint_url", ["https://sqs.eu-west-1.amazonaws.com", None])
def test_only_a_plain_http_endpoint_is_called_directly(endpoint_url):
    # GIVEN a client of AWS itself (HTTPS, botocore's endpoint rules)
    sqs = boto3.session.Session().client("sqs", region_name="eu-west-1", endpoint_url=endpoint_url)
    # THEN its calls stay botocore's
    assert not SqsCalls(sqs).direct


def test_a_stand_in_client_answers_its_own_calls():
    class StandIn:
        def receive_message(self, **params):
            return {"Messages": [{"Body": params["QueueUrl"]}]}

    # GIVEN something that is not a botocore client (a test's stand-in) THEN its own method answers
    calls = SqsCalls(StandIn())
    assert not calls.direct
    assert calls.receive_message(QueueUrl="q") == {"Messages": [{"Body": "q"}]}


@pytest.mark.parametrize("token", [None, "FQoGZXIvYXdzEJr//////////token"])
def test_a_direct_call_is_signed_as_botocore_signs_it(token, monkeypatch):
    from datetime import datetime, timezone

    import botocore.auth
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    from shared.adapters.sqs_json import _Signer

    # GIVEN one request, its credentials and its moment
    credentials = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token).get_frozen_credentials()
    body = b'{"QueueUrl":"http://127.0.0.1:4566/123456789012/jobs","MaxNumberOfMessages":10}'
    moment = datetime(2026, 11, 27, 16, 50, 7, tzinfo=timezone.utc)
    # WHEN botocore's signer signs it ...
    request = AWSRequest(method="POST", url="http://127.0.0.1:4566/", data=body, headers={
        "Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.ReceiveMessage"})
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: moment)  # botocore's clock, fixed
    SigV4Auth(credentials, "sqs", "eu-west-1").add_auth(request)
    # ... and ours does
    ours = dict(_Signer("127.0.0.1:4566", "eu-west-1").headers("ReceiveMessage", body, credentials, now=moment))
    # THEN the two Authorization headers are the same, and so are the headers they sign
    assert ours["authorization"] == request.headers["Authorization"]
    assert ours["x-amz-date"] == request.headers["X-Amz-Date"]
    assert ours.get("x-amz-security-token") == request.headers.get("X-Amz-Security-Token")


def test_an_answer_without_a_length_is_left_to_botocore_and_its_connection_closed():
    import socket
    import threading

    from shared.adapters.sqs_json import _Connection

    # GIVEN an endpoint that answers a call chunked (no Content-Length)
    server = socket.create_server(("127.0.0.1", 0))

    def answer_chunked():
        conn, _ = server.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")

    threading.Thread(target=answer_chunked, daemon=True).start()
    connection = _Connection("127.0.0.1", server.getsockname()[1])
    try:
        # WHEN a call is exchanged on it THEN its status comes back without a body, and the connection is closed
        assert connection.exchange(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n") == (200, None)
        assert not connection.open
    finally:
        connection.close()
        server.close()
