"""Jobs as a signed-in administrator reaches them (the console's "Try it" and job pages): run a
version as a test job without handling its test key, open one job of an engine, download its
filled workbook, see its webhook's delivery log and ask for a redelivery.

A test run is the same job the spec's test endpoint (``POST /jobs/test/...``) makes with the
version's test key: validated by the same input rules, ``is_test`` true, no consumer; it counts
in the tenant's and engine's ``test_calls`` like any other test-key job.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.orm import Session

from shared.db.models import Job, WebhookAttempt
from shared.errors import NotFound
from shared.repositories import jobs as job_repo
from shared.services import engines, jobs, versions, webhooks


def run_test(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, version_id: uuid.UUID, inputs: dict[str, Any]) -> Job:
    """Queue a test job on a version of this tenant's engine, as its test key would."""
    engine = engines.get(session, tenant_id=tenant_id, engine_id=engine_id)
    version = versions.get(session, tenant_id=tenant_id, engine_id=engine_id, version_id=version_id)
    return jobs.queue_test_job(session, engine=engine, version=version, inputs=inputs)


def get(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, job_id: uuid.UUID) -> Job:
    """One job of this tenant's engine, whoever ran it; NotFound otherwise."""
    engines.get(session, tenant_id=tenant_id, engine_id=engine_id)
    job = job_repo.get_job(session, job_id=job_id)
    if job is None or job.tenant_id != tenant_id or job.engine_id != engine_id:
        raise NotFound(jobs.JOB_NOT_FOUND)
    return job


def download(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, job_id: uuid.UUID) -> jobs.Download:
    """A temporary URL to the filled workbook of one of the engine's completed jobs."""
    return jobs.result_link(session, get(session, tenant_id=tenant_id, engine_id=engine_id, job_id=job_id))


def webhook_attempts(session: Session, *, job: Job) -> list[WebhookAttempt]:
    """The delivery log of a job already opened with ``get``."""
    return webhooks.attempts(session, job=job)


def redeliver_webhook(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, job_id: uuid.UUID) -> WebhookAttempt:
    """Queue one more POST of the webhook of one of the engine's jobs (a new, logged attempt)."""
    return webhooks.request_redelivery(session, job=get(session, tenant_id=tenant_id, engine_id=engine_id, job_id=job_id))
