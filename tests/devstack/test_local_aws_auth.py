"""The local AWS answers only requests signed with its own credentials (shared/devstack/local_auth.py).

Anyone on the machine can reach the dev stack's moto server on its loopback port: without a
signature made with the dev stack's key pair, nothing is read, written, listed or reset there.
"""

from __future__ import annotations

import json
import os
import stat
from datetime import datetime, timedelta, timezone
from urllib.parse import quote, urlsplit, urlunsplit

import boto3
import botocore.auth
import httpx
import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.exceptions import ClientError

from shared.adapters.aws import sqs_calls
from shared.adapters.storage import get_store
from shared.devstack.local_aws import (
    DEV_SECRETS_FILE,
    start_local_aws,
    use_dev_credentials,
)

KEY = "auth-test/result.xlsx"
CONTENT = b"PK\x03\x04 a workbook"


def s3_client(aws, **credentials):
    session = boto3.session.Session(**credentials)
    return session.client("s3", region_name=aws.region, endpoint_url=aws.endpoint_url, config=Config(signature_version="s3v4"))


@pytest.fixture(scope="module")
def stored(aws):
    """GIVEN an object in the local AWS's bucket, put there by a client with its credentials."""
    s3_client(aws).put_object(Bucket=aws.bucket, Key=KEY, Body=CONTENT)
    return aws


def object_url(aws, key: str = KEY) -> str:
    return f"{aws.endpoint_url}/{aws.bucket}/{key}"


def refusal(response: httpx.Response) -> str:
    assert response.status_code == 403, (response.status_code, response.text)
    return response.text


@pytest.mark.parametrize(
    "method, path, body",
    [
        ("GET", f"/{{bucket}}/{KEY}", None),  # read an object
        ("PUT", "/{bucket}/auth-test/planted.xlsx", b"planted"),  # write one
        ("GET", "/{bucket}?list-type=2", None),  # list the bucket
        ("DELETE", f"/{{bucket}}/{KEY}", None),  # delete one
        ("GET", "/moto-api/data.json", None),  # moto's own view of everything
        ("POST", "/moto-api/reset", None),  # and its reset
    ],
)
def test_an_unsigned_request_is_refused(stored, method, path, body):
    aws = stored
    # WHEN anyone on the machine calls the local AWS without signing
    response = httpx.request(method, aws.endpoint_url + path.format(bucket=aws.bucket), content=body)
    # THEN it is refused, and nothing was read, written or removed
    assert "<Code>AccessDenied</Code>" in refusal(response)
    assert s3_client(aws).get_object(Bucket=aws.bucket, Key=KEY)["Body"].read() == CONTENT
    with pytest.raises(ClientError):
        s3_client(aws).head_object(Bucket=aws.bucket, Key="auth-test/planted.xlsx")


def test_a_forged_signature_header_is_refused(stored):
    aws = stored
    own_key, now = boto3.session.Session().get_credentials().access_key, datetime.now(timezone.utc)
    forged = {"Authorization": f"AWS4-HMAC-SHA256 Credential={own_key}/{now:%Y%m%d}/us-east-1/s3/aws4_request, "
                               "SignedHeaders=host;x-amz-date, Signature=" + "0" * 64,
              "X-Amz-Date": f"{now:%Y%m%dT%H%M%SZ}"}
    assert "<Code>SignatureDoesNotMatch</Code>" in refusal(httpx.get(object_url(aws), headers=forged))


@pytest.mark.parametrize(
    "credentials, code",
    [
        ({"aws_access_key_id": "testing-not", "aws_secret_access_key": "testing"}, "InvalidAccessKeyId"),
        ({"aws_secret_access_key": "not-the-secret"}, "SignatureDoesNotMatch"),
    ],
)
def test_a_request_signed_with_other_credentials_is_refused(stored, credentials, code):
    aws = stored
    own = boto3.session.Session().get_credentials()
    credentials = {"aws_access_key_id": own.access_key, **credentials}
    s3 = s3_client(aws, **credentials)
    sqs = boto3.session.Session(**credentials).client("sqs", region_name=aws.region, endpoint_url=aws.endpoint_url)
    # WHEN a client signs with another key id, or with the right key id and another secret
    for call in (lambda: s3.get_object(Bucket=aws.bucket, Key=KEY), lambda: s3.list_objects_v2(Bucket=aws.bucket),
                 lambda: s3.put_object(Bucket=aws.bucket, Key=KEY, Body=b"overwritten"),
                 lambda: sqs.receive_message(QueueUrl=aws.jobs_queue_url, WaitTimeSeconds=0)):
        with pytest.raises(ClientError) as caught:
            call()
        # THEN S3 and SQS both refuse it (403, no retry), and the object is unchanged
        assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
        assert caught.value.response["Error"]["Code"] == code
    assert s3_client(aws).get_object(Bucket=aws.bucket, Key=KEY)["Body"].read() == CONTENT


def test_a_signed_request_whose_body_was_swapped_is_refused(stored):
    aws = stored
    # GIVEN a PUT signed by botocore over one body
    request = AWSRequest(method="PUT", url=object_url(aws, "auth-test/swapped.xlsx"), data=b"what was signed")
    S3SigV4Auth(boto3.session.Session().get_credentials(), "s3", aws.region).add_auth(request)
    # WHEN it is sent with another body under the same headers
    response = httpx.put(request.url, content=b"something else!", headers=dict(request.headers.items()))
    # THEN it is refused
    assert "<Code>XAmzContentSHA256Mismatch</Code>" in refusal(response)
    # while the request as signed goes through
    assert httpx.put(request.url, content=b"what was signed", headers=dict(request.headers.items())).status_code == 200


def test_a_request_signed_long_ago_is_refused(stored, monkeypatch):
    aws = stored
    # GIVEN a client whose signatures are dated an hour ago (a replayed or captured request)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: datetime.now(timezone.utc) - timedelta(hours=1))
    with pytest.raises(ClientError) as caught:
        s3_client(aws).get_object(Bucket=aws.bucket, Key=KEY)
    assert caught.value.response["Error"]["Code"] == "RequestTimeTooSkewed"


# --- presigned download links -----------------------------------------------------------------


def test_a_download_link_made_by_the_service_works(local_aws):
    # GIVEN a result stored and a link to it signed by the service (shared/adapters/storage.py)
    store = get_store()
    store.put("auth-test/job/result.xlsx", CONTENT)
    url, _expires_at = store.presigned_get("auth-test/job/result.xlsx", "loan quote (1).xlsx", 600)
    # WHEN anyone with the link downloads it, without credentials
    response = httpx.get(url)
    # THEN it is served, as the service asked for it
    assert response.status_code == 200, response.text
    assert response.content == CONTENT
    assert response.headers["content-disposition"] == 'attachment; filename="loan quote (1).xlsx"'


def _tampered(url: str, **changes) -> str:
    """The link with the changed parts in place of its own, every other byte as signed."""
    parts = urlsplit(url)
    path = changes.pop("path", parts.path)
    pairs = [pair.partition("=") for pair in parts.query.split("&")]
    query = "&".join(f"{key}={quote(changes[key], safe='') if key in changes else value}" for key, _, value in pairs)
    return urlunsplit(parts._replace(path=path, query=query))


@pytest.mark.parametrize(
    "change",
    [
        {"path": "/sheetcalc-workbooks/auth-test/job/other.xlsx"},  # another object with the same signature
        {"X-Amz-Signature": "0" * 64},
        {"X-Amz-Expires": "604800"},  # a longer life than signed
        {"X-Amz-Date": "20991231T000000Z"},
        {"response-content-disposition": 'attachment; filename="other.xlsx"'},
        {"X-Amz-Credential": "AKIAOTHEROTHEROTHER1/20261127/us-east-1/s3/aws4_request"},
    ],
)
def test_a_tampered_download_link_is_refused(local_aws, change):
    store = get_store()
    store.put("auth-test/job/result.xlsx", CONTENT)
    store.put("auth-test/job/other.xlsx", b"another tenant's result")
    url, _ = store.presigned_get("auth-test/job/result.xlsx", "result.xlsx", 600)
    assert httpx.get(_tampered(url)).status_code == 200  # the link rebuilt unchanged still works
    # WHEN one part of the link is changed THEN it is refused
    refusal(httpx.get(_tampered(url, **change)))


def test_an_expired_download_link_is_refused(local_aws, monkeypatch):
    store = get_store()
    store.put("auth-test/job/result.xlsx", CONTENT)
    # GIVEN a link signed two hours ago for one hour
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: datetime.now(timezone.utc) - timedelta(hours=2))
    url, _ = store.presigned_get("auth-test/job/result.xlsx", "result.xlsx", 3600)
    monkeypatch.undo()
    # WHEN it is used now THEN it is refused as expired
    assert "Request has expired" in refusal(httpx.get(url))


def test_the_services_direct_sqs_calls_are_signed_and_answered(local_aws):
    # The dev stack's performance path (shared/adapters/sqs_json.py) signs its own calls.
    calls = sqs_calls()
    assert calls.direct
    sent = calls.send_message_batch(QueueUrl=local_aws.checks_dlq_url, Entries=[{"Id": "1", "MessageBody": "signed"}])
    assert sent["Successful"]
    received = calls.receive_message(QueueUrl=local_aws.checks_dlq_url, MaxNumberOfMessages=10)
    assert [m["Body"] for m in received["Messages"]] == ["signed"]
    handles = [{"Id": "1", "ReceiptHandle": received["Messages"][0]["ReceiptHandle"]}]
    assert calls.delete_message_batch(QueueUrl=local_aws.checks_dlq_url, Entries=handles)["Successful"]


# --- the dev stack's own key pair ---------------------------------------------------------------


@pytest.fixture()
def own_environment(monkeypatch):
    """The AWS credentials of this process, given back after the test."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        if name in os.environ:
            monkeypatch.setenv(name, os.environ[name])
        else:
            monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_dev_stack_makes_a_key_pair_of_its_own_once_per_data_dir(tmp_path, own_environment):
    # GIVEN a data dir whose secrets file already holds the dev stack's other secrets, and
    # credentials in the environment (a developer's own)
    (tmp_path / DEV_SECRETS_FILE).write_text(json.dumps({"jwt_secret": "kept"}))
    own_environment.setenv("AWS_ACCESS_KEY_ID", "AKIADEVELOPERSOWNKEY")
    own_environment.setenv("AWS_SESSION_TOKEN", "a developer's session")
    # WHEN the dev stack starts on it, twice
    use_dev_credentials(tmp_path)
    first = (os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"])
    use_dev_credentials(tmp_path)
    # THEN it signs with a random pair of its own, the same across restarts, kept beside its
    # other secrets in a file only its user reads; the developer's credentials are not used
    stored = json.loads((tmp_path / DEV_SECRETS_FILE).read_text())
    assert first == (os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"])
    assert first == (stored["aws_access_key_id"], stored["aws_secret_access_key"])
    assert first[0] != "AKIADEVELOPERSOWNKEY" and len(first[0]) == 20 and len(first[1]) >= 40
    assert stored["jwt_secret"] == "kept"
    assert stat.S_IMODE((tmp_path / DEV_SECRETS_FILE).stat().st_mode) == 0o600
    assert "AWS_SESSION_TOKEN" not in os.environ
    # AND another data dir gets another pair
    other = tmp_path / "other"
    other.mkdir()
    use_dev_credentials(other)
    assert os.environ["AWS_ACCESS_KEY_ID"] != first[0]


def test_a_local_aws_started_with_the_dev_key_pair_answers_only_it(tmp_path, own_environment):
    testing = boto3.session.Session().get_credentials().get_frozen_credentials()
    # GIVEN the local AWS of a dev stack, started with its own key pair
    use_dev_credentials(tmp_path)
    aws = start_local_aws(bucket="dev-auth-test")
    try:
        # WHEN its own processes call it THEN they are answered
        s3_client(aws).put_object(Bucket=aws.bucket, Key="k", Body=b"v")
        assert s3_client(aws).get_object(Bucket=aws.bucket, Key="k")["Body"].read() == b"v"
        url = s3_client(aws).generate_presigned_url("get_object", Params={"Bucket": aws.bucket, "Key": "k"}, ExpiresIn=60)
        assert httpx.get(url).content == b"v"
        # AND a client with other credentials (the well-known dummy ones) is not
        with pytest.raises(ClientError) as caught:
            s3_client(aws, aws_access_key_id=testing.access_key, aws_secret_access_key=testing.secret_key).get_object(
                Bucket=aws.bucket, Key="k")
        assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    finally:
        aws.stop()
