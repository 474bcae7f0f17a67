"""Secrets from AWS Secrets Manager, read by the settings themselves (once per process).

In Lambda, ``SHEETCALC_SECRET_ARN`` names one or more JSON secrets (comma-separated) holding
``jwt_secret``, ``encryption_key`` and ``database_url``. ``SecretsManagerSource`` is one of the
sources of ``shared.config.Settings``, after the environment: a variable that is set wins, which
keeps local runs and tests in charge of their own configuration. The secrets are fetched the
first time settings are built and kept for the life of the process (a warm Lambda does not fetch
again); nothing is written into ``os.environ``. Without ``SHEETCALC_SECRET_ARN`` nothing is fetched.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_settings import PydanticBaseSettingsSource

SECRET_ARN_ENV = "SHEETCALC_SECRET_ARN"

# Secret key -> the settings key it fills. The database URL goes under its second alias, so
# that DATABASE_URL or SHEETCALC_DATABASE_URL set in the environment wins over it.
SECRET_KEYS = {
    "jwt_secret": "jwt_secret",
    "encryption_key": "encryption_key",
    "database_url": "SHEETCALC_DATABASE_URL",
}

_lock = threading.Lock()
# The ARN list -> the values its secrets hold, fetched once.
_fetched: dict[str, dict[str, str]] = {}


class SecretsError(RuntimeError):
    """A configured secret could not be read or is not a JSON object."""


def secret_values() -> dict[str, str]:
    """The known keys of the secrets ``SHEETCALC_SECRET_ARN`` names, fetched on first use."""
    arn_list = os.environ.get(SECRET_ARN_ENV, "")
    arns = [arn.strip() for arn in arn_list.split(",") if arn.strip()]
    if not arns:
        return {}
    with _lock:
        if arn_list not in _fetched:
            values: dict[str, Any] = {}
            for arn in arns:
                values.update(_fetch(arn))
            _fetched[arn_list] = {key: str(values[key]) for key in SECRET_KEYS if values.get(key)}
        return dict(_fetched[arn_list])


class SecretsManagerSource(PydanticBaseSettingsSource):
    """A settings source: the values of the configured secrets, under the settings' keys."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        # Unused: __call__ answers for every field at once.
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        return {SECRET_KEYS[key]: value for key, value in secret_values().items()}


def _secretsmanager():
    # Not shared.adapters.aws.client(): that reads get_settings(), which is being built.
    from shared.adapters.aws import _client

    region = os.environ.get("SHEETCALC_AWS_REGION") or os.environ.get("AWS_REGION") or "us-east-1"
    return _client("secretsmanager", region, os.environ.get("SHEETCALC_AWS_ENDPOINT_URL") or None)


def _fetch(arn: str) -> dict:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        secret = _secretsmanager().get_secret_value(SecretId=arn)
    except (ClientError, BotoCoreError) as exc:
        raise SecretsError(f"Cannot read secret {arn}") from exc
    try:
        values = json.loads(secret.get("SecretString") or "")
    except ValueError as exc:
        raise SecretsError(f"Secret {arn} is not JSON") from exc
    if not isinstance(values, dict):
        raise SecretsError(f"Secret {arn} is not a JSON object")
    return values


def reset() -> None:
    """Forget the fetched secrets (tests)."""
    with _lock:
        _fetched.clear()
