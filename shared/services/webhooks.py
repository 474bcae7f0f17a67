"""The single webhook attempt for a finished job: at most once, never retried."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import httpx

from shared import __version__
from shared.adapters import http
from shared.config import get_settings
from shared.db.models import Job, JobStatus
from shared.db.session import session_scope
from shared.repositories import jobs as job_repo
from shared.services import webhook_targets
from shared.timestamps import iso_utc

log = logging.getLogger(__name__)

FINISHED = (JobStatus.COMPLETED, JobStatus.FAILED)


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


def _post(url: str, body: dict[str, Any]) -> int:
    settings = get_settings()
    try:
        target = webhook_targets.resolve(url, allow_private=settings.private_webhooks_allowed)
    except webhook_targets.Refused as exc:
        log.warning("webhook target refused: %s", exc)
        return 0
    try:
        response = http.post_json_pinned(
            target.url,
            target.addresses,
            body=body,
            timeout=settings.webhook_timeout_seconds,
            headers={"User-Agent": f"sheetcalc-webhook/{__version__}"},
        )
        return response.status_code
    except httpx.HTTPError as exc:
        log.info("webhook delivery failed: %s", type(exc).__name__)
        return 0


def deliver(job_id: uuid.UUID) -> int | None:
    """POST the job's result once; returns the receiver's status, or None when nothing was sent."""
    with session_scope() as session:
        job = job_repo.get_job(session, job_id=job_id)
        if job is None or not job.webhook_url or job.status not in FINISHED:
            log.info("job %s has no webhook to send", job_id)
            return None
        if job_repo.claim_webhook(session, job_id=job_id) is None:
            log.info("webhook for job %s already attempted; skipping", job_id)
            return None
        body = payload(job)
        url = job.webhook_url
    # The claim is committed before the POST: a crash after it loses the webhook, never doubles it.
    status = _post(url, body)
    with session_scope() as session:
        job_repo.record_webhook_status(session, job_id=job_id, status=status)
    return status
