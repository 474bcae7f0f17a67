"""The consumer API's rules: execute, test-execute, about, job status and download.

Every function takes the call's ``ConsumerRequest`` and checks it in the contract's order: the
engine's IP whitelist first, then the key, then whether the engine or job is the caller's.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from shared.adapters import queues
from shared.adapters.storage import get_store
from shared.config import get_settings
from shared.db.models import Engine, EngineVersion, Job, JobStatus
from shared.errors import BadRequest, Forbidden, NotFound, SheetcalcError, Unauthorized
from shared.repositories import engines as engine_repo
from shared.repositories import jobs as job_repo
from shared.services import inputs as input_rules
from shared.services import rate_limits
from shared.services.callers import INVALID_API_KEY, Caller, ConsumerRequest

log = logging.getLogger(__name__)

NO_ACTIVE_VERSION = "Engine has no active version"
JOB_NOT_FOUND = "Job not found"
NO_EXECUTE = "Consumer does not have execute permission for this engine"
NO_VIEW = "Consumer does not have view permission for this job"
NO_DOWNLOAD = "Consumer does not have download permission for this job"
NO_ABOUT = "Consumer does not have view about permission for this engine"
NO_FILE = "The result file is not available for this job"
QUEUE_FAILED = "The job could not be queued"


@dataclass(frozen=True)
class Download:
    """A temporary link to a completed job's filled workbook."""

    url: str
    filename: str
    expires_at: datetime


def _engine_for_caller(session: Session, *, request: ConsumerRequest, tenant_slug: str, engine_slug: str) -> tuple[Engine, Caller]:
    # The whitelist is checked before the key, so a caller from an unlisted address learns nothing.
    engine = engine_repo.get_engine_by_slugs(session, tenant_slug=tenant_slug, engine_slug=engine_slug)
    request.admit(engine)
    caller = request.resolve(session)
    if engine is None or engine.tenant_id != caller.tenant_id:
        raise NotFound(f"Engine '{engine_slug}' not found")
    return engine, caller


def _permission(session: Session, caller: Caller, engine_id: uuid.UUID, flag: str) -> bool:
    if caller.consumer is None:
        return False
    access = engine_repo.get_access(session, tenant_id=caller.tenant_id, engine_id=engine_id, consumer_id=caller.consumer.id)
    return bool(access and getattr(access, flag))


def _active_version(session: Session, engine: Engine) -> EngineVersion:
    version = engine_repo.get_version(session, tenant_id=engine.tenant_id, version_id=engine.active_version_id) if engine.active_version_id else None
    if version is None:
        raise BadRequest(NO_ACTIVE_VERSION)
    return version


def _queue(
    session: Session, *, engine: Engine, version: EngineVersion, caller: Caller, inputs: dict[str, Any], webhook_url: str | None
) -> Job:
    rate_limits.ensure_room_for_a_job(session, tenant_id=engine.tenant_id)
    input_rules.validate(inputs, input_schema=version.input_schema, named_ranges=version.named_ranges)
    job = job_repo.add(session, Job(
        tenant_id=engine.tenant_id,
        engine_id=engine.id,
        engine_name=engine.name,
        engine_slug=engine.slug,
        version_id=version.id,
        version=version.version,
        consumer_id=caller.consumer.id if caller.consumer else None,
        consumer_name=caller.consumer.name if caller.consumer else None,
        is_test=caller.test_version is not None,
        status=JobStatus.PENDING,
        inputs=inputs,
        webhook_url=webhook_url,
    ))
    session.commit()
    try:
        queues.enqueue_job(job.id)
    except SheetcalcError:
        log.exception("could not queue job %s", job.id)
        job_repo.fail_unfinished(session, job_id=job.id, message=QUEUE_FAILED)
        session.commit()
        raise
    return job


def execute(
    session: Session, *, request: ConsumerRequest, tenant_slug: str, engine_slug: str,
    inputs: dict[str, Any], webhook_url: str | None = None,
) -> Job:
    """Queue a job on the engine's active version for a consumer with execute permission."""
    engine, caller = _engine_for_caller(session, request=request, tenant_slug=tenant_slug, engine_slug=engine_slug)
    if caller.consumer is None:
        raise Unauthorized(INVALID_API_KEY)
    if not _permission(session, caller, engine.id, "can_execute"):
        raise Forbidden(NO_EXECUTE)
    version = _active_version(session, engine)
    return _queue(session, engine=engine, version=version, caller=caller, inputs=inputs, webhook_url=webhook_url)


def test_execute(
    session: Session, *, request: ConsumerRequest, tenant_slug: str, engine_slug: str, version_id: uuid.UUID,
    inputs: dict[str, Any], webhook_url: str | None = None,
) -> Job:
    """Queue a job on a given version, for that version's test key only."""
    engine, caller = _engine_for_caller(session, request=request, tenant_slug=tenant_slug, engine_slug=engine_slug)
    if caller.test_version is None:
        raise Unauthorized(INVALID_API_KEY)
    version = engine_repo.get_version(session, tenant_id=engine.tenant_id, version_id=version_id)
    if version is None or version.engine_id != engine.id:
        raise NotFound("Engine version not found")
    if caller.test_version.id != version.id:
        raise Unauthorized(INVALID_API_KEY)
    return _queue(session, engine=engine, version=version, caller=caller, inputs=inputs, webhook_url=webhook_url)


def queue_test_job(session: Session, *, engine: Engine, version: EngineVersion, inputs: dict[str, Any]) -> Job:
    """Queue the job the version's test key would make (no consumer, ``is_test``), for a caller
    already allowed to run it (a signed-in administrator of the engine's tenant)."""
    caller = Caller(tenant_id=engine.tenant_id, test_version=version)
    return _queue(session, engine=engine, version=version, caller=caller, inputs=inputs, webhook_url=None)


def about(session: Session, *, request: ConsumerRequest, tenant_slug: str, engine_slug: str) -> tuple[Engine, EngineVersion]:
    """The engine and its active version, for a consumer allowed to view them."""
    engine, caller = _engine_for_caller(session, request=request, tenant_slug=tenant_slug, engine_slug=engine_slug)
    if not _permission(session, caller, engine.id, "can_view_about"):
        raise Forbidden(NO_ABOUT)
    return engine, _active_version(session, engine)


def _own_job(session: Session, *, request: ConsumerRequest, job_id: uuid.UUID, flag: str, denied: str) -> Job:
    # The whitelist of the job's engine applies, before the key is looked at.
    job = job_repo.get_job(session, job_id=job_id)
    if job is not None:
        request.admit(engine_repo.get_engine(session, tenant_id=job.tenant_id, engine_id=job.engine_id))
    caller = request.resolve(session)
    if job is None or job.tenant_id != caller.tenant_id:
        raise NotFound(JOB_NOT_FOUND)
    if caller.test_version is not None:
        allowed = job.is_test and job.version_id == caller.test_version.id
    else:
        allowed = job.consumer_id == caller.consumer.id and _permission(session, caller, job.engine_id, flag)
    if not allowed:
        raise Forbidden(denied)
    return job


def get_job(session: Session, *, request: ConsumerRequest, job_id: uuid.UUID) -> Job:
    """A job created with the caller's own key, for a caller allowed to view jobs."""
    return _own_job(session, request=request, job_id=job_id, flag="can_view_jobs", denied=NO_VIEW)


def download(session: Session, *, request: ConsumerRequest, job_id: uuid.UUID) -> Download:
    """A temporary URL to a completed job's filled workbook."""
    job = _own_job(session, request=request, job_id=job_id, flag="can_download", denied=NO_DOWNLOAD)
    return result_link(job)


def result_link(job: Job) -> Download:
    """A temporary URL to a job's filled workbook: 400 until it has completed, 404 without one."""
    if job.status != JobStatus.COMPLETED:
        raise BadRequest(f"Job not completed yet. Current status: {job.status}")
    if not job.result_key:
        raise NotFound(NO_FILE)
    stamp = (job.completed_at or job.updated_at).strftime("%Y%m%d_%H%M%S")
    filename = f"{job.engine_slug}_{str(job.id)[:8]}_{stamp}.xlsx"
    url, expires_at = get_store().presigned_get(job.result_key, filename, get_settings().download_url_ttl_seconds)
    return Download(url=url, filename=filename, expires_at=expires_at)
