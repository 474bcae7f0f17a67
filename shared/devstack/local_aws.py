"""A local AWS for the dev stack: moto's server on a free loopback port, with the bucket and the
queues (each with its dead-letter queue) that ``template.yaml`` declares in the cloud.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field

import boto3
from moto.server import ThreadedMotoServer

# As in template.yaml: a message is tried this many times before it goes to the dead-letter queue.
MAX_RECEIVE_COUNT = 3
JOBS_VISIBILITY_TIMEOUT = 60
# Longer than a version check may take (the formulas check's 240 s deadline, then the copy).
CHECKS_VISIBILITY_TIMEOUT = 300
WEBHOOKS_VISIBILITY_TIMEOUT = 30
DLQ_RETENTION_SECONDS = 14 * 24 * 3600


@dataclass(frozen=True)
class LocalAws:
    """A running moto server and the resources created on it."""

    endpoint_url: str
    region: str
    bucket: str
    jobs_queue_url: str
    jobs_dlq_url: str
    checks_queue_url: str
    checks_dlq_url: str
    webhooks_queue_url: str
    webhooks_dlq_url: str
    server: ThreadedMotoServer = field(repr=False, compare=False)

    def stop(self) -> None:
        """Shut the moto server down (its state is lost)."""
        self.server.stop()


def ensure_dummy_credentials(region: str = "us-east-1") -> None:
    """Give boto3 credentials and a region when the environment has none (moto accepts any)."""
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", region)


def create_queue_with_dlq(sqs, name: str, *, visibility_timeout: int,
                          max_receive_count: int = MAX_RECEIVE_COUNT) -> tuple[str, str]:
    """Create queue ``name`` and ``name-dlq`` with a redrive policy; return both urls."""
    dlq_url = sqs.create_queue(
        QueueName=f"{name}-dlq", Attributes={"MessageRetentionPeriod": str(DLQ_RETENTION_SECONDS)}
    )["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    redrive = {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(max_receive_count)}
    url = sqs.create_queue(
        QueueName=name,
        Attributes={"VisibilityTimeout": str(visibility_timeout), "RedrivePolicy": json.dumps(redrive)},
    )["QueueUrl"]
    return url, dlq_url


def start_local_aws(*, host: str = "127.0.0.1", port: int = 0, region: str = "us-east-1",
                    bucket: str = "sheetcalc-workbooks", prefix: str = "sheetcalc") -> LocalAws:
    """Start moto on ``host:port`` (0: any free port) and create the bucket and queues."""
    ensure_dummy_credentials(region)
    werkzeug_log = logging.getLogger("werkzeug")
    if werkzeug_log.level == logging.NOTSET:
        # Otherwise moto's werkzeug server logs every request (the pollers make one a second).
        werkzeug_log.setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address=host, port=port, verbose=False)
    server.start()
    bound_host, bound_port = server.get_host_and_port()
    endpoint_url = f"http://{bound_host}:{bound_port}"
    try:
        session = boto3.session.Session()
        s3 = session.client("s3", region_name=region, endpoint_url=endpoint_url)
        if region == "us-east-1":
            s3.create_bucket(Bucket=bucket)
        else:
            s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": region})
        sqs = session.client("sqs", region_name=region, endpoint_url=endpoint_url)
        jobs_url, jobs_dlq_url = create_queue_with_dlq(
            sqs, f"{prefix}-jobs", visibility_timeout=JOBS_VISIBILITY_TIMEOUT
        )
        checks_url, checks_dlq_url = create_queue_with_dlq(
            sqs, f"{prefix}-checks", visibility_timeout=CHECKS_VISIBILITY_TIMEOUT
        )
        webhooks_url, webhooks_dlq_url = create_queue_with_dlq(
            sqs, f"{prefix}-webhooks", visibility_timeout=WEBHOOKS_VISIBILITY_TIMEOUT
        )
    except BaseException:
        server.stop()
        raise
    return LocalAws(
        endpoint_url=endpoint_url,
        region=region,
        bucket=bucket,
        jobs_queue_url=jobs_url,
        jobs_dlq_url=jobs_dlq_url,
        checks_queue_url=checks_url,
        checks_dlq_url=checks_dlq_url,
        webhooks_queue_url=webhooks_url,
        webhooks_dlq_url=webhooks_dlq_url,
        server=server,
    )
