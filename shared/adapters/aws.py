"""boto3 clients built from settings (a moto endpoint in dev and tests, AWS in Lambda)."""

from __future__ import annotations

import functools

import boto3
from botocore.config import Config

from shared.adapters.sqs_json import SqsCalls
from shared.config import get_settings


@functools.cache
def _client(service: str, region: str, endpoint_url: str | None):
    config = Config(retries={"max_attempts": 3, "mode": "standard"}, signature_version="s3v4" if service == "s3" else None)
    return boto3.session.Session().client(service, region_name=region, endpoint_url=endpoint_url, config=config)


def client(service: str):
    """A cached boto3 client for ``service`` on the configured region and endpoint."""
    settings = get_settings()
    return _client(service, settings.aws_region, settings.aws_endpoint_url)


@functools.cache
def _sqs_calls(sqs_client) -> SqsCalls:
    return SqsCalls(sqs_client)


def sqs_calls() -> SqsCalls:
    """The cached SQS client's batch calls, straight to a local plain-HTTP endpoint
    (``shared.adapters.sqs_json``); through the client itself everywhere else."""
    return _sqs_calls(client("sqs"))


def reset_clients() -> None:
    """Forget cached clients (after settings change)."""
    _client.cache_clear()
    _sqs_calls.cache_clear()
