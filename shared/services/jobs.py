"""The consumer API's rules: execute, test-execute, about, job status and download."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from sqlalchemy.orm import Session

from shared.adapters import queues
from shared.adapters.storage import get_store
from shared.config import get_settings
from shared.db.models import Engine, EngineVersion, Job, JobStatus
from shared.errors import BadRequest, Forbidden, NotFound, SheetcalcError, Unauthorized
from shared.repositories import engines as engine_repo
from shared.repositories import jobs as job_repo
from shared.services import inputs, ip_policy
from shared.services.callers import INVALID_API_KEY, Caller, resolve

log = logging.getLogger(__name__)

NO_ACTIVE_VERSION = "Engine has no active version"
JOB_NOT_FOUND = "Job not found"
NO_EXECUTE = "Consumer does not have execute permission for this engine"
NO_VIEW = "Consumer does not have view permission for this job"
NO_DOWNLOAD = "Consumer does not have download permission for this job"
NO_ABOUT = "Consumer does not have view about permission for this engine"
NO_FILE = "The result file is not available for this job"
QUEUE_FAILED = "The job could not be queued"


def _engine_for_caller(session: Session, *, tenant_slug: str, engine_slug: str, api_key: str | None, client_ip: str | None) -> tuple[Engine, Caller]:
    # The whitelist is checked before the key, so a caller from an unlisted address learns nothing.
    engine = engine_repo.get_engine_by_slugs(session, tenant_slug=tenant_slug, engine_slug=engine_slug)
    ip_policy.enforce(engine, client_ip)
    caller = resolve(session, api_key=api_key)
    if engine is None or engine.tenant_id != caller.tenant_id:
        raise NotFound(f"Engine '{engine_slug}' not found")
    return engine, caller


def _permission(session: Session, caller: Caller, engine_id: uuid.UUID, flag: str) -> bool:
    if caller.consumer is None:
        return False
    access = engine_repo.get_access(session, tenant_id=caller.tenant_id, engine_id=engine_id, consumer_id=caller.consumer.id)
    return bool(access and getattr(access, flag))


def _queue(session: Session, job: Job) -> Job:
    session.commit()
    try:
        queues.enqueue_job(job.id)
    except SheetcalcError:
        log.exception("could not queue job %s", job.id)
        job_repo.fail_unfinished(session, job_id=job.id, message=QUEUE_FAILED)
        session.commit()
        raise
    return job


def _new_job(engine: Engine, version: EngineVersion, caller: Caller, body: dict[str, Any]) -> Job:
    return Job(
        tenant_id=engine.tenant_id,
        engine_id=engine.id,
        engine_name=engine.name,
        engine_slug=engine.slug,
        version_id=version.id,
        version=version.version,
        consumer_id=caller.consumer.id if caller.consumer else None,
        consumer_name=caller.consumer.name if caller.consumer else None,
        is_test=caller.test_version is not None,
        status=JobStatus.PENDING.value,
        inputs=body["inputs"],
        webhook_url=body.get("webhook_url"),
    )


def execute(session: Session, *, tenant_slug: str, engine_slug: str, api_key: str | None, client_ip: str | None, body: dict[str, Any]) -> Job:
    """Queue a job on the engine's active version for a consumer with execute permission."""
    engine, caller = _engine_for_caller(session, tenant_slug=tenant_slug, engine_slug=engine_slug, api_key=api_key, client_ip=client_ip)
    if caller.consumer is None:
        raise Unauthorized(INVALID_API_KEY)
    if not _permission(session, caller, engine.id, "can_execute"):
        raise Forbidden(NO_EXECUTE)
    version = engine_repo.get_version(session, tenant_id=engine.tenant_id, version_id=engine.active_version_id) if engine.active_version_id else None
    if version is None:
        raise BadRequest(NO_ACTIVE_VERSION)
    inputs.validate(body["inputs"], input_schema=version.input_schema, named_ranges=version.named_ranges)
    job = _new_job(engine, version, caller, body)
    session.add(job)
    return _queue(session, job)


def test_execute(session: Session, *, tenant_slug: str, engine_slug: str, version_id: uuid.UUID, api_key: str | None, client_ip: str | None, body: dict[str, Any]) -> Job:
    """Queue a job on a given version, for that version's test key only."""
    engine, caller = _engine_for_caller(session, tenant_slug=tenant_slug, engine_slug=engine_slug, api_key=api_key, client_ip=client_ip)
    if caller.test_version is None:
        raise Unauthorized(INVALID_API_KEY)
    version = engine_repo.get_version(session, tenant_id=engine.tenant_id, version_id=version_id)
    if version is None or version.engine_id != engine.id:
        raise NotFound("Engine version not found")
    if caller.test_version.id != version.id:
        raise Unauthorized(INVALID_API_KEY)
    inputs.validate(body["inputs"], input_schema=version.input_schema, named_ranges=version.named_ranges)
    job = _new_job(engine, version, caller, body)
    session.add(job)
    return _queue(session, job)


def about(session: Session, *, tenant_slug: str, engine_slug: str, api_key: str | None, client_ip: str | None) -> tuple[Engine, EngineVersion]:
    """The engine and its active version, for a consumer allowed to view them."""
    engine, caller = _engine_for_caller(session, tenant_slug=tenant_slug, engine_slug=engine_slug, api_key=api_key, client_ip=client_ip)
    if not _permission(session, caller, engine.id, "can_view_about"):
        raise Forbidden(NO_ABOUT)
    version = engine_repo.get_version(session, tenant_id=engine.tenant_id, version_id=engine.active_version_id) if engine.active_version_id else None
    if version is None:
        raise BadRequest(NO_ACTIVE_VERSION)
    return engine, version


def _own_job(session: Session, *, job_id: uuid.UUID, api_key: str | None, client_ip: str | None, flag: str, denied: str) -> Job:
    job = job_repo.get_job(session, job_id=job_id)
    if job is not None:
        engine = engine_repo.get_engine(session, tenant_id=job.tenant_id, engine_id=job.engine_id)
        ip_policy.enforce(engine, client_ip)
    caller = resolve(session, api_key=api_key)
    if job is None or job.tenant_id != caller.tenant_id:
        raise NotFound(JOB_NOT_FOUND)
    if caller.test_version is not None:
        allowed = job.is_test and job.version_id == caller.test_version.id
    else:
        allowed = job.consumer_id == caller.consumer.id and _permission(session, caller, job.engine_id, flag)
    if not allowed:
        raise Forbidden(denied)
    return job


def get_job(session: Session, *, job_id: uuid.UUID, api_key: str | None, client_ip: str | None) -> Job:
    """A job created with the caller's own key, for a caller allowed to view jobs."""
    return _own_job(session, job_id=job_id, api_key=api_key, client_ip=client_ip, flag="can_view_jobs", denied=NO_VIEW)


def download(session: Session, *, job_id: uuid.UUID, api_key: str | None, client_ip: str | None) -> dict[str, Any]:
    """A temporary URL to a completed job's filled workbook."""
    job = _own_job(session, job_id=job_id, api_key=api_key, client_ip=client_ip, flag="can_download", denied=NO_DOWNLOAD)
    if job.status != JobStatus.COMPLETED.value:
        raise BadRequest(f"Job not completed yet. Current status: {job.status}")
    if not job.result_key:
        raise NotFound(NO_FILE)
    stamp = (job.completed_at or job.updated_at).strftime("%Y%m%d_%H%M%S")
    filename = f"{job.engine_slug}_{str(job.id)[:8]}_{stamp}.xlsx"
    url, expires_at = get_store().presigned_get(job.result_key, filename, get_settings().download_url_ttl_seconds)
    return {"download_url": url, "filename": filename, "expires_at": expires_at}


def job_view(job: Job) -> dict[str, Any]:
    """The job as the consumer API shows it: fields by status (spec, Consumer: jobs, rule 3)."""
    view: dict[str, Any] = {"job_id": job.id, "status": job.status, "created_at": job.created_at, "updated_at": job.updated_at}
    if job.status == JobStatus.COMPLETED.value:
        view.update(inputs=job.inputs, outputs=job.outputs, completed_at=job.completed_at, execution_time_ms=job.execution_time_ms)
    elif job.status == JobStatus.FAILED.value:
        view.update(inputs=job.inputs, error_message=job.error_message)
    if job.webhook_url:
        view["webhook_url"] = job.webhook_url
    if job.webhook_sent_at is not None:
        view.update(webhook_sent_at=job.webhook_sent_at, webhook_response_status=job.webhook_response_status)
    return view
