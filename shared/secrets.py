"""Secrets from AWS Secrets Manager, copied into the environment once per process (cold start).

In Lambda, ``SHEETCALC_SECRET_ARN`` names one or more JSON secrets (comma-separated) holding
``jwt_secret``, ``encryption_key`` and ``database_url``. Each handler calls
``load_secrets_into_env()`` before settings are first read, so ``get_settings()`` sees them as
ordinary environment variables. Variables already set win, which keeps local runs and tests in
charge of their own configuration. Without ``SHEETCALC_SECRET_ARN`` nothing happens.
"""

from __future__ import annotations

import json
import os
import threading

SECRET_ARN_ENV = "SHEETCALC_SECRET_ARN"

# Secret key -> environment variable read by shared.config.Settings.
SECRET_KEYS = {
    "jwt_secret": "SHEETCALC_JWT_SECRET",
    "encryption_key": "SHEETCALC_ENCRYPTION_KEY",
    "database_url": "DATABASE_URL",
}

_lock = threading.Lock()
_loaded = False


class SecretsError(RuntimeError):
    """A configured secret could not be read or is not a JSON object."""


def load_secrets_into_env() -> list[str]:
    """Fetch the configured secrets once per process; return the variables this call set."""
    global _loaded
    with _lock:
        if _loaded:
            return []
        arns = [arn.strip() for arn in os.environ.get(SECRET_ARN_ENV, "").split(",") if arn.strip()]
        if not arns:
            _loaded = True
            return []
        values: dict[str, str] = {}
        for arn in arns:
            values.update(_fetch(arn))
        assigned = []
        for key, env_name in SECRET_KEYS.items():
            value = values.get(key)
            if value and not os.environ.get(env_name):
                os.environ[env_name] = str(value)
                assigned.append(env_name)
        _loaded = True
    if assigned:
        # Settings or clients cached before this call would not see the new values.
        from shared.config import reset_settings

        reset_settings()
    return assigned


def _secretsmanager():
    # Not shared.adapters.aws.client(): that reads get_settings(), which in prod refuses to
    # load until the very secrets fetched here are in the environment.
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
    """Forget that secrets were loaded (tests)."""
    global _loaded
    with _lock:
        _loaded = False
