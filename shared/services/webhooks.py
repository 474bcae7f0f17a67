"""The single webhook attempt for a finished job (at most once, never retried), signed, and the
redeliveries an administrator asks for; every POST is recorded in the delivery log. A body over
``max_webhook_payload_bytes`` goes by reference (``bounded_body``)."""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import httpx
from sqlalchemy.orm import Session

from shared import __version__
from shared.adapters import http, queues
from shared.config import get_settings
from shared.db.models import Job, JobStatus, WebhookAttempt
from shared.db.session import session_scope
from shared.db.types import utcnow
from shared.errors import BadRequest, Conflict, SheetcalcError
from shared.repositories import jobs as job_repo
from shared.repositories import webhook_attempts as attempt_repo
from shared.services import webhook_signing, webhook_targets
from shared.timestamps import iso_utc

log = logging.getLogger(__name__)

FINISHED = (JobStatus.COMPLETED, JobStatus.FAILED)
EXCERPT_BYTES = 1024
NO_WEBHOOK = "This job has no webhook_url: there is no webhook to redeliver"
NOT_YET_ATTEMPTED = "This job's webhook has not been attempted yet: its first attempt comes first"


def payload(job: Job) -> dict[str, Any]:
    """The event body for a finished job (spec, Events)."""
    if job.status == JobStatus.COMPLETED:
        return {
            "job_id": str(job.id),
            "status": job.status,
            "inputs": job.inputs,
            "outputs": job.outputs,
            "created_at": iso_utc(job.created_at),
            "completed_at": iso_utc(job.completed_at),
            "execution_time_ms": job.execution_time_ms,
        }
    return {
        "job_id": str(job.id),
        "status": job.status,
        "error_message": job.error_message,
        "created_at": iso_utc(job.created_at),
        "updated_at": iso_utc(job.updated_at),
    }


# A completed job's webhook body over ``max_webhook_payload_bytes`` leaves out these fields, in
# this order, until it fits: the outputs first (the job's GET returns them), then the inputs (the
# receiver sent them). Each one left out is flagged (``"outputs_omitted": true``), and
# ``"job_path"`` (``/jobs/{job_id}`` on the API the job was submitted to) is where to read it.
OMITTABLE = ("outputs", "inputs")


def _encode(event: dict[str, Any]) -> bytes:
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def bounded_body(job: Job, *, max_bytes: int) -> bytes:
    """The job's event as the bytes to sign and POST: whole when it fits in ``max_bytes``, else
    by reference (its outputs, then its inputs, left out and flagged, with the job's path to poll)."""
    event = payload(job)
    body = _encode(event)
    if len(body) <= max_bytes or job.status != JobStatus.COMPLETED:
        return body
    event["job_path"] = f"/jobs/{job.id}"
    omitted = []
    for name in OMITTABLE:
        del event[name]
        event[f"{name}_omitted"] = True
        omitted.append(name)
        body = _encode(event)
        if len(body) <= max_bytes:
            break
    log.info("webhook of job %s sent without its %s (over %d bytes)", job.id, " and ".join(omitted), max_bytes)
    return body


@dataclass(frozen=True)
class Outcome:
    """How one POST ended, as the delivery log records it."""

    status_code: int  # 0 when no HTTP answer came
    duration_ms: int
    response_excerpt: str | None
    error_class: str | None  # None for a 2xx answer


def _excerpt(start: bytes) -> str | None:
    # As text for the console: undecodable bytes (and NUL, which PostgreSQL text refuses) replaced.
    return start.decode("utf-8", errors="replace").replace("\x00", "\ufffd") if start else None


def _post(url: str, body: bytes, headers: dict[str, str]) -> Outcome:
    settings = get_settings()
    started = time.monotonic()

    def ended(status: int, error_class: str | None, start: bytes = b"") -> Outcome:
        return Outcome(status, round((time.monotonic() - started) * 1000), _excerpt(start), error_class)

    try:
        target = webhook_targets.resolve(url, allow_private=settings.private_webhooks_allowed)
    except webhook_targets.Refused as exc:
        log.warning("webhook target refused: %s", exc)
        return ended(0, "refused_private_address" if isinstance(exc, webhook_targets.NotPublic) else "unresolvable")
    try:
        answer = http.post_pinned(
            target.url,
            target.addresses,
            content=body,
            timeout=settings.webhook_timeout_seconds,
            headers={"User-Agent": f"sheetcalc-webhook/{__version__}", "Content-Type": "application/json", **headers},
            read_limit=EXCERPT_BYTES,
        )
    except httpx.TimeoutException:
        log.info("webhook delivery timed out")
        return ended(0, "timeout")
    except httpx.HTTPError as exc:
        log.info("webhook delivery failed: %s", type(exc).__name__)
        return ended(0, "connection")
    return ended(answer.status_code, None if 200 <= answer.status_code < 300 else "http_error", answer.body_start)


def _signed(session: Session, body: bytes, *, tenant_id: uuid.UUID, now: datetime, headers: dict[str, str]) -> tuple[bytes, dict[str, str]]:
    """The body (exactly the bytes signed) and the signature header, with ``headers``."""
    keys = webhook_signing.signing_secrets(session, tenant_id=tenant_id, now=now)
    signature = webhook_signing.signature_header(body, keys=keys, timestamp=int(now.timestamp()))
    return body, {webhook_signing.SIGNATURE_HEADER: signature, **headers}


def _signed_request(session: Session, job: Job, *, now: datetime) -> tuple[bytes, dict[str, str]]:
    """The body (exactly the bytes signed, within the payload limit) and the signature and job id headers."""
    body = bounded_body(job, max_bytes=get_settings().max_webhook_payload_bytes)
    return _signed(session, body, tenant_id=job.tenant_id, now=now, headers={webhook_signing.JOB_ID_HEADER: str(job.id)})


def _post_and_record(url: str, body: bytes, headers: dict[str, str], *, attempt_id: uuid.UUID, first_of: uuid.UUID | None) -> int:
    """Make the claimed attempt's POST and log how it ended; the first attempt also on its job (spec fields)."""
    outcome = _post(url, body, headers)
    with session_scope() as session:
        if first_of is not None:
            job_repo.record_webhook_status(session, job_id=first_of, status=outcome.status_code)
        attempt_repo.record_outcome(session, attempt_id=attempt_id, **asdict(outcome))
    return outcome.status_code


BATCH_ID_HEADER = "Sheetcalc-Batch-Id"


def post_event(url: str, body: dict[str, Any], *, tenant_id: uuid.UUID, event_id: uuid.UUID) -> int:
    """The one HTTP path of webhooks, for a finished batch (``event_id`` its id): signed as a job's
    are, with ``Sheetcalc-Batch-Id``; the receiver's status, or 0. Not in the jobs' delivery log."""
    with session_scope() as session:
        raw, headers = _signed(session, _encode(body), tenant_id=tenant_id, now=utcnow(), headers={BATCH_ID_HEADER: str(event_id)})
    return _post(url, raw, headers).status_code


def deliver(job_id: uuid.UUID) -> int | None:
    """POST the job's result once; returns the receiver's status, or None when nothing was sent."""
    with session_scope() as session:
        job = job_repo.get_job(session, job_id=job_id)
        if job is None or not job.webhook_url or job.status not in FINISHED:
            log.info("job %s has no webhook to send", job_id)
            return None
        sent_at = job_repo.claim_webhook(session, job_id=job_id)
        if sent_at is None:
            log.info("webhook for job %s already attempted; skipping", job_id)
            return None
        body, headers = _signed_request(session, job, now=sent_at)
        url = job.webhook_url
        attempt = attempt_repo.add(session, WebhookAttempt(
            tenant_id=job.tenant_id, job_id=job.id, redelivery=False, requested_at=sent_at, attempted_at=sent_at, target_url=url,
        ))
        attempt_id = attempt.id
    # The claim is committed before the POST: a crash after it loses the webhook, never doubles it.
    return _post_and_record(url, body, headers, attempt_id=attempt_id, first_of=job_id)


def request_redelivery(session: Session, *, job: Job) -> WebhookAttempt:
    """Ask the webhook function for one more POST of a finished job's webhook (an administrator's
    request; never automatic). The job's own webhook fields keep describing its first attempt."""
    if not job.webhook_url:
        raise BadRequest(NO_WEBHOOK)
    if job.webhook_sent_at is None:
        raise Conflict(NOT_YET_ATTEMPTED)
    attempt = attempt_repo.add(session, WebhookAttempt(
        tenant_id=job.tenant_id, job_id=job.id, redelivery=True, requested_at=utcnow(), target_url=job.webhook_url,
    ))
    session.commit()
    try:
        queues.enqueue_webhook_redelivery(attempt.id)
    except SheetcalcError:
        log.exception("could not queue the webhook redelivery of job %s", job.id)
        session.delete(attempt)  # never made: not in the log
        session.commit()
        raise
    return attempt


def redeliver(attempt_id: uuid.UUID) -> int | None:
    """Make a requested redelivery's POST, once; returns the receiver's status, or None when nothing was sent."""
    with session_scope() as session:
        attempt = attempt_repo.get(session, attempt_id=attempt_id)
        job = job_repo.get_job(session, job_id=attempt.job_id) if attempt is not None else None
        if job is None:
            log.info("webhook redelivery %s names no job", attempt_id)
            return None
        attempted_at = attempt_repo.claim(session, attempt_id=attempt_id)
        if attempted_at is None:
            log.info("webhook redelivery %s already attempted; skipping", attempt_id)
            return None
        body, headers = _signed_request(session, job, now=attempted_at)
        url = attempt.target_url
    return _post_and_record(url, body, headers, attempt_id=attempt_id, first_of=None)


def attempts(session: Session, *, job: Job) -> list[WebhookAttempt]:
    """The job's delivery log, oldest first."""
    return attempt_repo.list_for_job(session, tenant_id=job.tenant_id, job_id=job.id)
