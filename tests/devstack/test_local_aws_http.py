"""The local AWS's HTTP server (shared/devstack/local_aws.py): connections kept between calls,
requests routed to the same services as moto routes them."""

from __future__ import annotations

import gc
import http.client
import json
from urllib.parse import urlsplit

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from shared.devstack.children import _freeze_what_is_loaded

# The credential scope names the service moto routes to; the local AWS answers only requests
# signed with its own credentials (this process's), so each request here is signed by botocore.
SQS_HEADERS = {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.ListQueues"}


def signed(aws, body: bytes, headers: dict) -> dict:
    """``headers`` and the SigV4 headers of a POST of ``body`` to the local AWS's SQS."""
    request = AWSRequest(method="POST", url=aws.endpoint_url + "/", data=body, headers=headers)
    SigV4Auth(boto3.session.Session().get_credentials(), "sqs", aws.region).add_auth(request)
    return dict(request.headers.items())


@pytest.fixture
def connection(aws):
    address = urlsplit(aws.endpoint_url)
    conn = http.client.HTTPConnection(address.hostname, address.port, timeout=60)
    yield conn
    conn.close()


def list_queues(aws, conn: http.client.HTTPConnection, **headers) -> http.client.HTTPResponse:
    body = json.dumps({}).encode()
    conn.request("POST", "/", body=body, headers=signed(aws, body, {**SQS_HEADERS, **headers}))
    return conn.getresponse()


def test_one_connection_serves_one_call_after_another(aws, connection):
    # GIVEN one HTTP/1.1 connection to the local AWS
    answers = []
    for _ in range(3):
        # WHEN calls are made on it one after another
        response = list_queues(aws, connection)
        answers.append((response.status, response.getheader("Connection"), json.loads(response.read())))

    # THEN each is answered, none closes the connection, and all reach the same SQS
    assert [status for status, _, _ in answers] == [200, 200, 200]
    assert [header for _, header, _ in answers] == [None, None, None]
    assert aws.jobs_queue_url in answers[0][2]["QueueUrls"]
    assert answers[0][2] == answers[2][2]


def test_a_client_asking_for_close_gets_it(aws, connection):
    # WHEN a call says it is the connection's last
    response = list_queues(aws, connection, Connection="close")
    response.read()

    # THEN it is answered and the server closes the connection too
    assert response.status == 200
    assert response.getheader("Connection") == "close"


def test_a_chunked_body_is_answered_and_the_connection_closed(aws, connection):
    # GIVEN a request whose body comes in chunks (its end is not known from its headers)
    body = json.dumps({"QueueUrl": aws.jobs_queue_url, "AttributeNames": ["QueueArn"]}).encode()
    headers = signed(aws, body, {**SQS_HEADERS, "X-Amz-Target": "AmazonSQS.GetQueueAttributes"})

    # WHEN it is sent
    connection.request("POST", "/", body=iter([body[:10], body[10:]]), headers=headers, encode_chunked=True)
    response = connection.getresponse()

    # THEN it is answered in full, and the connection is closed after it (as werkzeug always did)
    assert response.status == 200
    assert json.loads(response.read())["Attributes"]["QueueArn"].endswith("sheetcalc-jobs")
    assert response.getheader("Connection") == "close"


def test_boto3_calls_to_s3_and_sqs_still_reach_their_services(aws):
    # GIVEN boto3 clients on the local AWS, which now answers several calls per connection
    session = boto3.session.Session()
    s3 = session.client("s3", region_name=aws.region, endpoint_url=aws.endpoint_url)
    sqs = session.client("sqs", region_name=aws.region, endpoint_url=aws.endpoint_url)

    # WHEN a body goes to S3 and a message to SQS, between other calls on the same connections
    s3.put_object(Bucket=aws.bucket, Key="http-test/a.txt", Body=b"x" * 100_000)
    sqs.send_message(QueueUrl=aws.checks_dlq_url, MessageBody="hello")
    got = s3.get_object(Bucket=aws.bucket, Key="http-test/a.txt")["Body"].read()
    messages = sqs.receive_message(QueueUrl=aws.checks_dlq_url, WaitTimeSeconds=0).get("Messages", [])

    # THEN each answer is the one its own service gives
    assert got == b"x" * 100_000
    assert [m["Body"] for m in messages] == ["hello"]


def test_a_ready_child_leaves_what_it_loaded_out_of_garbage_collections():
    # WHEN a child freezes what it has loaded (as it does just before it reports ready)
    try:
        _freeze_what_is_loaded()
        # THEN those objects are no longer walked by the collector's passes
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
