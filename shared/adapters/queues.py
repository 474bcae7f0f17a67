"""Message queues (SQS). Messages carry ids, never objects."""

from __future__ import annotations

import json

from botocore.exceptions import ClientError

from shared.adapters.aws import client
from shared.config import get_settings
from shared.errors import ServiceUnavailable


def _send(queue_url: str | None, body: dict) -> None:
    if not queue_url:
        raise ServiceUnavailable("Job queue is not configured")
    try:
        client("sqs").send_message(QueueUrl=queue_url, MessageBody=json.dumps(body))
    except ClientError as exc:
        raise ServiceUnavailable("Job queue is not available") from exc


def enqueue_job(job_id) -> None:
    """Ask a worker to compute ``job_id``."""
    _send(get_settings().jobs_queue_url, {"job_id": str(job_id)})


def enqueue_version_check(version_id) -> None:
    """Ask the checks function for a new version's background work: the slower engines' checks,
    the copy to the tenant's document library. Its own queue: no job waits behind a check."""
    _send(get_settings().checks_queue_url, {"version_id": str(version_id)})


def enqueue_webhook(job_id) -> None:
    """Ask the webhook function to deliver ``job_id``'s result."""
    _send(get_settings().webhooks_queue_url, {"job_id": str(job_id)})
