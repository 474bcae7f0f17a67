"""The dev stack's local S3 keeps its objects under the data dir: stored before the PUT is
answered, removed with the object, loaded back at the next start, on the same port."""

from __future__ import annotations

import json
import uuid

import boto3
import pytest

from shared.devstack.local_aws import ENDPOINT_FILE, start_local_aws
from shared.devstack.object_mirror import XLSX_CONTENT_TYPE, ObjectMirror


@pytest.fixture()
def bucket() -> str:
    # moto's state is one per process: a bucket of its own keeps this test's objects apart.
    return f"mirror-{uuid.uuid4().hex[:12]}"


def s3_of(aws):
    return boto3.session.Session().client("s3", region_name=aws.region, endpoint_url=aws.endpoint_url)


def test_an_object_is_on_disk_once_stored_and_gone_once_deleted(tmp_path, bucket):
    aws = start_local_aws(bucket=bucket, state_dir=tmp_path)
    try:
        s3 = s3_of(aws)
        # WHEN the service stores an object and the PUT is answered
        s3.put_object(Bucket=bucket, Key="results/t/j.xlsx", Body=b"PK-filled")
        # THEN it is already on disk
        assert aws.mirror.keys() == ["results/t/j.xlsx"]
        assert aws.mirror.path("results/t/j.xlsx").read_bytes() == b"PK-filled"
        # AND deleting it (as deleting a tenant's prefix does) removes the file
        s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "results/t/j.xlsx"}], "Quiet": True})
        assert aws.mirror.keys() == []
    finally:
        aws.stop()


def test_a_restart_loads_the_objects_back_on_the_same_port(tmp_path, bucket):
    # GIVEN the objects a previous run left under the data dir, and the port it used
    ObjectMirror(bucket, tmp_path / "s3" / bucket).write("tenants/t/engines/e/versions/v/workbook.xlsx", b"PK-upload")
    ObjectMirror(bucket, tmp_path / "s3" / bucket).write("tenants/t/engines/e/versions/v/prepared.ironcalc", b"model")
    first = start_local_aws(bucket=f"{bucket}-first", state_dir=tmp_path)
    port = json.loads((tmp_path / ENDPOINT_FILE).read_text())["port"]
    first.stop()
    # AND a write the kill interrupted (never acknowledged)
    (tmp_path / "s3" / bucket / "half.partial").write_bytes(b"P")
    # WHEN the stack starts again
    aws = start_local_aws(bucket=bucket, state_dir=tmp_path)
    try:
        s3 = s3_of(aws)
        # THEN moto answers on the port it had, so download links handed out before still work
        assert aws.endpoint_url.endswith(f":{port}")
        # AND serves every object with the content type the service stored it with
        upload = s3.get_object(Bucket=bucket, Key="tenants/t/engines/e/versions/v/workbook.xlsx")
        assert upload["Body"].read() == b"PK-upload" and upload["ContentType"] == XLSX_CONTENT_TYPE
        model = s3.get_object(Bucket=bucket, Key="tenants/t/engines/e/versions/v/prepared.ironcalc")
        assert model["Body"].read() == b"model" and model["ContentType"] == "application/octet-stream"
        # AND the interrupted write is dropped
        assert not (tmp_path / "s3" / bucket / "half.partial").exists()
        assert sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]) == aws.mirror.keys()
    finally:
        aws.stop()


def test_buckets_without_a_mirror_stay_in_memory_only(tmp_path, bucket):
    aws = start_local_aws(bucket=bucket)
    try:
        s3_of(aws).put_object(Bucket=bucket, Key="k", Body=b"v")
        assert aws.mirror is None and list(tmp_path.iterdir()) == []
    finally:
        aws.stop()
