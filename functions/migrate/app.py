"""Database migrations on deploy: a CloudFormation custom resource's handler.

On Create and Update it brings the database up to the newest Alembic revision; Delete leaves the
database alone. It always answers CloudFormation at the pre-signed ``ResponseURL`` (FAILED with
a reason on any error, or when time runs out), so a deploy never hangs for an hour waiting.
``Enabled: "false"`` in the resource's properties skips the migration.

Invoked directly (``aws lambda invoke`` with an empty event) it just migrates, and raises on
error: that is the documented manual step.
"""

from __future__ import annotations

import json
import threading

import httpx

from shared.config import get_settings
from shared.db.migrate import upgrade
from shared.observability import instrument, logger

PHYSICAL_RESOURCE_ID = "sheetcalc-database-migrations"
# Stop waiting this long before the function's own timeout, to leave time to answer.
ANSWER_MARGIN_MS = 15_000
RESPONSE_TIMEOUT_SECONDS = 30.0


def migrate() -> None:
    """Bring the configured database (the settings', from the secrets in Lambda) up to the newest revision."""
    upgrade()


@instrument
def handler(event: dict, context) -> dict:
    """Custom resource (``RequestType`` in the event) or direct invocation."""
    if "RequestType" not in event:
        migrate()
        logger.info("database migrated")
        return {"status": "migrated"}
    return handle_custom_resource(event, context)


def handle_custom_resource(event: dict, context) -> dict:
    """Run the request and answer CloudFormation; returns the answer sent."""
    request_type = event["RequestType"]
    properties = event.get("ResourceProperties") or {}
    status, reason = "SUCCESS", f"{request_type}: nothing to do"
    try:
        if request_type in ("Create", "Update") and str(properties.get("Enabled", "true")).lower() != "false":
            _run_within(migrate, _seconds_left(context))
            reason = f"{request_type}: database migrated"
    except Exception as exc:  # noqa: BLE001 - every failure must reach CloudFormation
        logger.exception("migration failed")
        status, reason = "FAILED", _reason(exc, context)
    answer = {
        "Status": status,
        "Reason": reason,
        "PhysicalResourceId": event.get("PhysicalResourceId") or PHYSICAL_RESOURCE_ID,
        "StackId": event.get("StackId"),
        "RequestId": event.get("RequestId"),
        "LogicalResourceId": event.get("LogicalResourceId"),
        "Data": {},
    }
    _answer(event["ResponseURL"], answer)
    return answer


def _seconds_left(context) -> float | None:
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if remaining is None:
        return None
    return max((remaining() - ANSWER_MARGIN_MS) / 1000, 1.0)


def _run_within(work, seconds: float | None) -> None:
    """Run ``work``; raise TimeoutError if it is not done in ``seconds`` (None: no limit)."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            work()
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            outcome.append(exc)

    thread = threading.Thread(target=target, name="migrate", daemon=True)
    thread.start()
    thread.join(seconds)
    if not outcome:
        raise TimeoutError(f"migrations did not finish within {seconds:.0f} s (is the database reachable?)")
    if outcome[0] is not None:
        raise outcome[0]


def _reason(exc: BaseException, context) -> str:
    text = f"{type(exc).__name__}: {exc}"
    url = _database_url()
    if url:
        text = text.replace(url, "<DATABASE_URL>")
    where = getattr(context, "log_stream_name", None)
    suffix = f" (log stream {where})" if where else ""
    return ("Migration failed: " + text)[:400] + suffix


def _database_url() -> str | None:
    try:
        return get_settings().database_url
    except Exception:  # noqa: BLE001 - the settings themselves may be what failed
        return None


def _answer(url: str, answer: dict) -> None:
    # The pre-signed S3 URL is signed without a content type: send none.
    body = json.dumps(answer)
    response = httpx.put(url, content=body, headers={"Content-Type": ""}, timeout=RESPONSE_TIMEOUT_SECONDS)
    logger.info("answered CloudFormation", extra={"status": answer["Status"], "http_status": response.status_code})
    response.raise_for_status()
