"""The local AWS (shared/devstack/local_aws.py) answers as moto does, shortcuts or not: SQS
sends, receives, deletes and visibility, S3 puts and gets, through boto3 as the service calls them;
each shortcut into moto's internals is skipped when moto no longer has what it replaces."""

from __future__ import annotations

import json
import logging

import boto3
import pytest
from werkzeug.test import Client

from shared.devstack import local_aws
from shared.devstack.local_aws import LocalAws, create_queue_with_dlq, start_local_aws


@pytest.fixture(scope="module")
def aws() -> LocalAws:
    stack = start_local_aws(prefix="moto-behaviour")
    yield stack
    stack.stop()


@pytest.fixture(scope="module")
def sqs(aws):
    return boto3.session.Session().client("sqs", region_name=aws.region, endpoint_url=aws.endpoint_url)


@pytest.fixture
def queue_url(sqs, request):
    # A queue of its own per test, as the dev stack declares them (60 s visibility, a DLQ after 3 tries).
    url, _ = create_queue_with_dlq(sqs, f"q-{request.node.name[:60]}", visibility_timeout=60)
    yield url
    sqs.purge_queue(QueueUrl=url)


def receive(sqs, queue_url, most=10):
    return sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=most, WaitTimeSeconds=0,
                               MessageSystemAttributeNames=["All"], MessageAttributeNames=["All"]).get("Messages", [])


def test_a_batch_sent_is_received_once_and_deleted_in_one_call(sqs, queue_url):
    # GIVEN ten messages sent in one SendMessageBatch
    sent = sqs.send_message_batch(QueueUrl=queue_url, Entries=[
        {"Id": str(i), "MessageBody": f'{{"job_id": "{i}"}}'} for i in range(10)])
    assert len(sent["Successful"]) == 10 and not sent.get("Failed")

    # WHEN they are received (up to ten at a time)
    received = receive(sqs, queue_url)

    # THEN all ten come, with their bodies and moto's system attributes, and not again while invisible
    assert sorted(m["Body"] for m in received) == sorted(f'{{"job_id": "{i}"}}' for i in range(10))
    assert all(m["Attributes"]["ApproximateReceiveCount"] == "1" for m in received)
    assert receive(sqs, queue_url) == []

    # WHEN they are deleted in one DeleteMessageBatch
    deleted = sqs.delete_message_batch(QueueUrl=queue_url, Entries=[
        {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(received)])

    # THEN every deletion succeeded and they never come back, even once visible again
    assert len(deleted["Successful"]) == 10 and not deleted.get("Failed")
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "0"
    assert attributes["ApproximateNumberOfMessagesNotVisible"] == "0"


def test_a_message_not_deleted_comes_back_when_its_visibility_ends(sqs, queue_url):
    # GIVEN a message received and not deleted (the queue's 60 s visibility timeout hides it)
    sqs.send_message(QueueUrl=queue_url, MessageBody='{"job_id": "again"}')
    [first] = receive(sqs, queue_url)
    assert receive(sqs, queue_url) == []

    # WHEN its visibility ends (set to 0 rather than waited for)
    sqs.change_message_visibility(QueueUrl=queue_url, ReceiptHandle=first["ReceiptHandle"], VisibilityTimeout=0)

    # THEN it is received again, counted as its second receive, with a new receipt handle
    [second] = receive(sqs, queue_url)
    assert second["MessageId"] == first["MessageId"] and second["Body"] == first["Body"]
    assert second["Attributes"]["ApproximateReceiveCount"] == "2"
    assert second["ReceiptHandle"] != first["ReceiptHandle"]


def test_an_object_put_is_read_back_and_a_missing_key_is_moto_s_no_such_key(aws):
    s3 = boto3.session.Session().client("s3", region_name=aws.region, endpoint_url=aws.endpoint_url)
    # GIVEN an object put in the dev stack's bucket
    s3.put_object(Bucket=aws.bucket, Key="tests/behaviour.bin", Body=b"\x00sheet\xff" * 100)

    # WHEN it is read back, and a key never put is asked for
    body = s3.get_object(Bucket=aws.bucket, Key="tests/behaviour.bin")["Body"].read()
    with pytest.raises(s3.exceptions.NoSuchKey):
        s3.get_object(Bucket=aws.bucket, Key="tests/never-put.bin")

    # THEN the bytes are those put
    assert body == b"\x00sheet\xff" * 100


def test_request_lines_are_logged_when_werkzeug_s_logger_wants_them(aws, sqs, caplog, monkeypatch):
    # GIVEN werkzeug's logger at INFO (the dev stack sets WARNING)
    monkeypatch.setattr(logging.getLogger("werkzeug"), "level", logging.INFO)
    # WHEN a call is made
    with caplog.at_level(logging.INFO, logger="werkzeug"):
        sqs.list_queues()
    # THEN its request line is logged, as werkzeug always did
    assert any("POST / HTTP/1.1" in record.getMessage() for record in caplog.records if record.name == "werkzeug")


def test_request_lines_are_not_logged_at_warning(aws, sqs, caplog, monkeypatch):
    # GIVEN werkzeug's logger at WARNING, as the dev stack sets it
    monkeypatch.setattr(logging.getLogger("werkzeug"), "level", logging.WARNING)
    # WHEN a call is made
    with caplog.at_level(logging.WARNING, logger="werkzeug"):
        sqs.list_queues()
    # THEN nothing is logged for it
    assert [record for record in caplog.records if record.name == "werkzeug"] == []


def test_the_dispatch_shortcut_is_not_made_when_moto_lacks_what_it_replaces(monkeypatch):
    from moto import backends
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    # GIVEN a moto without one of the internals the dispatch shortcut replaces (as after an upgrade)
    monkeypatch.delattr(DomainDispatcherApplication, "_sheetcalc_cached", raising=False)
    monkeypatch.delattr(backends, "list_of_moto_modules")
    routing = DomainDispatcherApplication.get_backend_for_host

    # WHEN the shortcut is asked for
    local_aws._moto_dispatch_made_cheap()

    # THEN nothing of moto is replaced: its own routing stays
    assert DomainDispatcherApplication.get_backend_for_host is routing
    assert not getattr(DomainDispatcherApplication, "_sheetcalc_cached", False)


def test_moto_s_names_are_converted_as_moto_converts_them_and_once_each(aws, sqs, queue_url):
    from moto.core import utils as moto_utils
    from moto.sqs import models as sqs_models

    # GIVEN the local AWS running (its shortcuts made) and a message already sent once
    convert = sqs_models.camelcase_to_underscores
    sqs.send_message(QueueUrl=queue_url, MessageBody="first")
    before = convert.cache_info()

    # WHEN more messages are sent
    for body in ("second", "third"):
        sqs.send_message(QueueUrl=queue_url, MessageBody=body)

    # THEN no name was converted again, and every queue attribute's name converts as moto's own loop does
    after = convert.cache_info()
    assert after.misses == before.misses and after.hits > before.hits
    for name in [*sqs_models.Queue.BASE_ATTRIBUTES, "SendMessageBatch", "ContentBasedDeduplication"]:
        assert convert(name) == moto_utils.camelcase_to_underscores(name)
    assert [m["Body"] for m in receive(sqs, queue_url)] == ["first", "second", "third"]


def test_receipt_handles_and_request_ids_are_moto_s_random_strings(aws, sqs, queue_url):
    import string

    from moto.moto_api._internal import mock_random
    from moto.sqs import models as sqs_models

    # GIVEN messages on the queue
    sqs.send_message_batch(QueueUrl=queue_url, Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(5)])

    # WHEN they are received
    answer = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
    handles = [m["ReceiptHandle"] for m in answer["Messages"]]

    # THEN each receipt handle is moto's: 185 lowercase letters, each its own; the request id 52 letters and digits
    assert len(handles) == 5 and len(set(handles)) == 5
    assert all(len(h) == 185 and set(h) <= set(string.ascii_lowercase) for h in handles)
    request_id = answer["ResponseMetadata"]["RequestId"]
    assert len(request_id) == 52 and set(request_id) <= set(string.ascii_letters + string.digits)
    # AND they come from moto's seedable random source (same seed, same strings)
    mock_random.seed(15)
    first = (sqs_models.generate_receipt_handle(), mock_random.get_random_string(length=52))
    mock_random.seed(15)
    assert (sqs_models.generate_receipt_handle(), mock_random.get_random_string(length=52)) == first


def test_the_random_string_shortcut_is_not_made_when_moto_lacks_what_it_replaces(monkeypatch):
    from moto.moto_api._internal import moto_random
    from moto.sqs import models as sqs_models

    # GIVEN a moto whose SQS models no longer make receipt handles by that name
    monkeypatch.delattr(sqs_models, "generate_receipt_handle")
    drawing = moto_random.MotoRandom.get_random_string
    monkeypatch.setattr(moto_random.MotoRandom, "get_random_string", drawing)  # restored after the test

    # WHEN the shortcut is asked for THEN moto keeps its own way of drawing strings
    local_aws._random_strings_drawn_at_once()
    assert moto_random.MotoRandom.get_random_string is drawing


def test_the_name_shortcut_is_not_made_when_moto_lacks_what_it_replaces(monkeypatch):
    from moto.core import responses as moto_responses
    from moto.sqs import models as sqs_models

    # GIVEN a moto whose SQS models no longer import the name conversion (as after an upgrade)
    monkeypatch.delattr(sqs_models, "camelcase_to_underscores")
    convert = moto_responses.camelcase_to_underscores
    monkeypatch.setattr(moto_responses, "camelcase_to_underscores", convert)  # restored after the test

    # WHEN the shortcut is asked for
    local_aws._names_converted_once()

    # THEN moto's responses keep the conversion they had
    assert moto_responses.camelcase_to_underscores is convert


def test_the_backlog_shortcut_is_not_made_when_moto_lacks_what_it_replaces(monkeypatch):
    from moto.sqs import models as sqs_models

    # GIVEN a moto whose SQS backend no longer has the retention check the shortcut replaces
    monkeypatch.delattr(sqs_models.SQSBackend, "is_message_valid_based_on_retention_period")
    clock = sqs_models.unix_time
    monkeypatch.setattr(sqs_models, "unix_time", clock)  # restored after the test, whatever happens

    # WHEN the shortcut is asked for
    local_aws._sqs_backlogs_made_cheap()

    # THEN moto's SQS keeps its own clock and no retention check is put in
    assert sqs_models.unix_time is clock
    assert not hasattr(sqs_models.SQSBackend, "is_message_valid_based_on_retention_period")


def test_messages_sent_received_and_deleted_are_not_kept_in_memory(aws, sqs, queue_url):
    import gc
    import tracemalloc

    from moto.sqs import models as sqs_models

    def through_the_queue(n: int) -> None:
        for _ in range(n // 5):
            sqs.send_message_batch(QueueUrl=queue_url, Entries=[{"Id": str(k), "MessageBody": "x" * 60} for k in range(5)])
            got = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
            sqs.delete_message_batch(QueueUrl=queue_url, Entries=[
                {"Id": str(k), "ReceiptHandle": m["ReceiptHandle"]} for k, m in enumerate(got)])

    # GIVEN the local AWS (in this process) warmed up
    through_the_queue(200)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()

        # WHEN 2,000 messages go through a queue: sent, received, deleted
        through_the_queue(2000)
        gc.collect()
        grown = sum(stat.size_diff for stat in tracemalloc.take_snapshot().compare_to(before, "filename")
                    if "moto" in stat.traceback[0].filename)
    finally:
        tracemalloc.stop()

    # THEN moto holds no list of them (its own keeps every message and every copy received: about
    # 1.3 MB per 1,000), and what it allocated and still holds is only the deleted handles it
    # remembers (a few hundred bytes each, bounded)
    assert len(sqs_models.Message.instances_tracked) == 0
    assert grown < 2000 * 400, grown


def test_a_queue_remembers_a_bounded_number_of_deleted_handles(monkeypatch):
    # GIVEN the set that stands for a queue's deleted receipt handles, kept to the last three
    monkeypatch.setattr(local_aws._RecentHandles, "limit", 3)
    handles = local_aws._RecentHandles()

    # WHEN five messages' handles are added, the second twice
    for batch in (["a"], ["b", "b2"], ["c"], ["d"]):
        handles.update(batch)

    # THEN the last three are remembered, the oldest are forgotten
    assert set(handles) == {"b2", "c", "d"}
    assert "a" not in handles and "d" in handles


def test_the_memory_shortcut_is_not_made_when_moto_lacks_what_it_replaces(monkeypatch):
    from moto.sqs import models as sqs_models

    # GIVEN a moto whose SQS messages are no longer listed on their class
    monkeypatch.delattr(sqs_models.Message, "instances_tracked")
    queue_init = sqs_models.Queue.__init__

    # WHEN the shortcut is asked for
    local_aws._sqs_memory_kept_flat()

    # THEN nothing of moto is replaced
    assert sqs_models.Queue.__init__ is queue_init
    assert not hasattr(sqs_models.Message, "instances_tracked")


def _sqs_call(target: str, body: dict) -> dict:
    # An SQS JSON-protocol request as botocore sends it (moto accepts any signature).
    return dict(method="POST", path="/", data=json.dumps(body), headers={
        "Authorization": "AWS4-HMAC-SHA256 Credential=testing/20261127/us-east-1/sqs/aws4_request, "
                         "SignedHeaders=host, Signature=0",
        "Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": f"AmazonSQS.{target}"})


def _answer(app, call: dict) -> tuple[int, str, dict | str]:
    response = Client(app).open(**call)
    text = response.get_data(as_text=True)
    try:
        body = json.loads(text)
    except ValueError:
        body = text
    return response.status_code, response.headers.get("Content-Type"), body


def test_sqs_calls_answered_straight_from_moto_s_sqs_are_answered_as_moto_s_app_answers_them(aws):
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    # GIVEN moto's own app and the local AWS's, over the same moto state
    direct, own = local_aws._moto_app(), DomainDispatcherApplication(create_backend_app)
    assert isinstance(direct, local_aws._SqsCallsDirect)
    url = own_url = None
    for app in (direct, own):
        # WHEN each makes the same queue
        status, _, made = _answer(app, _sqs_call("CreateQueue", {"QueueName": "direct-or-not"}))
        url, own_url = (made["QueueUrl"], own_url) if app is direct else (url, made["QueueUrl"])
    # ... and is asked for it, for one that does not exist, to send to that one, to delete with a bad handle
    answers = {}
    for name, app in (("direct", direct), ("own", own)):
        answers[name] = [
            _answer(app, _sqs_call("GetQueueUrl", {"QueueName": "direct-or-not"})),
            _answer(app, _sqs_call("GetQueueUrl", {"QueueName": "never-made"})),
            _answer(app, _sqs_call("SendMessage", {"QueueUrl": url.replace("direct-or-not", "never-made"), "MessageBody": "x"})),
            _answer(app, _sqs_call("DeleteMessage", {"QueueUrl": url, "ReceiptHandle": "not-a-handle"})),
        ]

    # THEN status, content type and body are the same, errors included (MessageIds differ by nature)
    assert url == own_url
    assert answers["direct"] == answers["own"]
    assert [status for status, _, _ in answers["direct"]] == [200, 400, 400, 400]
    assert answers["direct"][1][2]["__type"] == "com.amazonaws.sqs#QueueDoesNotExist"


def test_only_sqs_s_json_calls_skip_moto_s_flask_app(aws, sqs, monkeypatch):
    import flask

    # GIVEN a count of the requests moto's Flask apps handle
    handled = []
    wsgi_app = flask.Flask.wsgi_app
    monkeypatch.setattr(flask.Flask, "wsgi_app", lambda self, *a: handled.append(self.service) or wsgi_app(self, *a))
    s3 = boto3.session.Session().client("s3", region_name=aws.region, endpoint_url=aws.endpoint_url)

    # WHEN SQS calls and an S3 call are made on the running local AWS
    sqs.list_queues()
    sqs.get_queue_url(QueueName=aws.jobs_queue_url.rsplit("/", 1)[1])
    s3.head_bucket(Bucket=aws.bucket)

    # THEN only the S3 call went through Flask
    assert handled == ["s3"]


def test_the_direct_sqs_path_is_not_made_when_moto_lacks_what_it_calls(monkeypatch):
    from moto.moto_server import werkzeug_app

    # GIVEN a moto whose server no longer has the request class the direct path builds
    monkeypatch.delattr(werkzeug_app, "BackendRequest")

    # WHEN the local AWS's app is made
    app = local_aws._moto_app()

    # THEN it is moto's own
    assert not isinstance(app, local_aws._SqsCallsDirect)
