"""The consumer API's rules: execute, test-execute, about, job status and download.

Every function takes the call's ``ConsumerRequest`` and checks it in the contract's order: the
engine's IP whitelist first, then the key, then whether the engine or job is the caller's.
"""

from __future__ import annotations

import logging
import threading
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from shared.adapters import queues
from shared.adapters.storage import XLSX_CONTENT_TYPE, get_store
from shared.config import get_settings
from shared.db.models import Batch, Engine, EngineAccess, EngineVersion, Job, JobStatus
from shared.errors import BadRequest, Conflict, Forbidden, InputValidationError, NotFound, SheetcalcError, Unauthorized, WorkbookError
from shared.repositories import engines as engine_repo
from shared.repositories import jobs as job_repo
from shared.services import idempotency
from shared.services import inputs as input_rules
from shared.services import job_runner
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
NO_WAIT = "Consumer does not have view permission for this engine's jobs, which wait needs"


@dataclass(frozen=True)
class Download:
    """A temporary link to a completed job's filled workbook."""

    url: str
    filename: str
    expires_at: datetime


def _engine_for_caller(
    session: Session, *, request: ConsumerRequest, tenant_slug: str, engine_slug: str
) -> tuple[Engine, Caller, EngineVersion | None]:
    """The engine a consumer URL names, the caller, and the engine's active version (read with
    the engine: most calls need it)."""
    # One statement reads the engine, its active version and the key's consumer with its access;
    # the whitelist is still judged before the key, so a caller from an unlisted address learns
    # nothing (the key's row is read either way, in the same statement: no answer or timing differs).
    found = engine_repo.get_engine_version_and_key_by_slugs(
        session, tenant_slug=tenant_slug, engine_slug=engine_slug, key_hash=request.key_hash)
    engine, active, consumer, access = found if found is not None else (None, None, None, None)
    request.admit(engine)
    if engine is None:
        caller = request.resolve(session)
    else:
        caller = request.resolve(session, engine_id=engine.id, read=(consumer, access))
    if engine is None or engine.tenant_id != caller.tenant_id:
        raise NotFound(f"Engine '{engine_slug}' not found")
    return engine, caller, active


def _access(session: Session, caller: Caller, engine_id: uuid.UUID) -> EngineAccess | None:
    if caller.consumer is None:
        return None
    known, access = caller.known_access(engine_id)
    if known:  # read with the key (the request named this engine)
        return access
    return engine_repo.get_access(session, tenant_id=caller.tenant_id, engine_id=engine_id, consumer_id=caller.consumer.id)


def _permission(session: Session, caller: Caller, engine_id: uuid.UUID, flag: str) -> bool:
    access = _access(session, caller, engine_id)
    return bool(access and getattr(access, flag))


def _active_version(active: EngineVersion | None) -> EngineVersion:
    if active is None:
        raise BadRequest(NO_ACTIVE_VERSION)
    return active


def _queue(
    session: Session, *, engine: Engine, version: EngineVersion, caller: Caller, inputs: dict[str, Any], webhook_url: str | None,
    idempotency_key: str | None = None, job_id: uuid.UUID | None = None,
) -> Job:
    once = None
    if idempotency_key is not None:
        once = dict(
            tenant_id=engine.tenant_id, caller=caller.rate_key, key=idempotency.check_key(idempotency_key),
            request_hash=idempotency.fingerprint(target=engine.id, inputs=inputs, webhook_url=webhook_url),
        )
        first = idempotency.replay(session, **once)
        if first is not None:
            return first
    rate_limits.ensure_room_for_a_job(session, tenant_id=engine.tenant_id)
    input_rules.validate(inputs, input_schema=version.input_schema, named_ranges=version.named_ranges)
    job_id = job_id or uuid.uuid4()
    if once is not None and not idempotency.bind(session, **once, job_id=job_id):
        # A concurrent request with this key won (and has committed): answer with its job.
        first = idempotency.replay(session, **once)
        if first is None:
            raise Conflict(idempotency.KEY_REUSED)
        return first
    job = job_repo.insert_new(
        session,
        id=job_id,
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
        version_sha256=version.content_sha256,
    )
    session.commit()
    try:
        # its tenant's message group (fair queues), on its version's lane
        queues.enqueue_job(job.id, tenant_id=job.tenant_id, lane=version.lane)
    except SheetcalcError:
        log.exception("could not queue job %s", job.id)
        job_repo.fail_unfinished(session, job_id=job.id, message=QUEUE_FAILED)
        idempotency.release(session, job_id=job.id)
        session.commit()
        raise
    return job


def execute(
    session: Session, *, request: ConsumerRequest, tenant_slug: str, engine_slug: str,
    inputs: dict[str, Any], webhook_url: str | None = None, waiting: bool = False, idempotency_key: str | None = None,
    job_id: uuid.UUID | None = None,
) -> Job:
    """Queue a job (with ``job_id`` when given) on the engine's active version for a consumer with
    execute permission (and view permission when ``waiting`` for the answer, which shows the job);
    with an idempotency key already used for this same request, the job that request made."""
    engine, caller, active = _engine_for_caller(session, request=request, tenant_slug=tenant_slug, engine_slug=engine_slug)
    if caller.consumer is None:
        raise Unauthorized(INVALID_API_KEY)
    access = _access(session, caller, engine.id)  # read once: waiting needs a second flag of it
    if not (access and access.can_execute):
        raise Forbidden(NO_EXECUTE)
    if waiting and not access.can_view_jobs:
        raise Forbidden(NO_WAIT)
    version = _active_version(active)
    return _queue(
        session, engine=engine, version=version, caller=caller, inputs=inputs, webhook_url=webhook_url, idempotency_key=idempotency_key,
        job_id=job_id,
    )


def test_execute(
    session: Session, *, request: ConsumerRequest, tenant_slug: str, engine_slug: str, version_id: uuid.UUID,
    inputs: dict[str, Any], webhook_url: str | None = None, idempotency_key: str | None = None, job_id: uuid.UUID | None = None,
) -> Job:
    """Queue a job (with ``job_id`` when given) on a given version, for that version's test key only."""
    engine, caller, _ = _engine_for_caller(session, request=request, tenant_slug=tenant_slug, engine_slug=engine_slug)
    if caller.test_version is None:
        raise Unauthorized(INVALID_API_KEY)
    version = engine_repo.get_version(session, tenant_id=engine.tenant_id, version_id=version_id)
    if version is None or version.engine_id != engine.id:
        raise NotFound("Engine version not found")
    if caller.test_version.id != version.id:
        raise Unauthorized(INVALID_API_KEY)
    return _queue(
        session, engine=engine, version=version, caller=caller, inputs=inputs, webhook_url=webhook_url, idempotency_key=idempotency_key,
        job_id=job_id,
    )


def queue_test_job(session: Session, *, engine: Engine, version: EngineVersion, inputs: dict[str, Any]) -> Job:
    """Queue the job the version's test key would make (no consumer, ``is_test``), for a caller
    already allowed to run it (a signed-in administrator of the engine's tenant)."""
    caller = Caller(tenant_id=engine.tenant_id, test_version=version)
    return _queue(session, engine=engine, version=version, caller=caller, inputs=inputs, webhook_url=None)


def about(session: Session, *, request: ConsumerRequest, tenant_slug: str, engine_slug: str) -> tuple[Engine, EngineVersion]:
    """The engine and its active version, for a consumer allowed to view them."""
    engine, caller, active = _engine_for_caller(session, request=request, tenant_slug=tenant_slug, engine_slug=engine_slug)
    if not _permission(session, caller, engine.id, "can_view_about"):
        raise Forbidden(NO_ABOUT)
    return engine, _active_version(active)


def owner_caller(session: Session, *, request: ConsumerRequest, row: Job | Batch | None, not_found: str) -> Caller:
    """The caller asking about a job or batch (``row``, None when unknown): the whitelist of its
    engine first, before the key is looked at; NotFound unless it is of the caller's tenant."""
    engine = engine_repo.get_engine(session, tenant_id=row.tenant_id, engine_id=row.engine_id) if row is not None else None
    return _checked_owner(session, request=request, row=row, engine=engine, not_found=not_found)


def _checked_owner(session: Session, *, request: ConsumerRequest, row: Job | Batch | None, engine: Engine | None, not_found: str) -> Caller:
    if row is not None:
        request.admit(engine)
    caller = request.resolve(session, engine_id=row.engine_id if row is not None else None)
    if row is None or row.tenant_id != caller.tenant_id:
        raise NotFound(not_found)
    return caller


def _own_job(session: Session, *, request: ConsumerRequest, job_id: uuid.UUID, flag: str, denied: str) -> Job:
    job, engine = job_repo.get_job_with_engine(session, job_id=job_id)
    caller = _checked_owner(session, request=request, row=job, engine=engine, not_found=JOB_NOT_FOUND)
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
    return result_link(session, job)


def result_link(session: Session, job: Job) -> Download:
    """A temporary URL to a job's filled workbook: 400 until it has completed, 404 without one.

    The file is produced on the first download (``_store_result``) and stored, so later ones
    only sign a URL."""
    if job.status != JobStatus.COMPLETED:
        raise BadRequest(f"Job not completed yet. Current status: {job.status}")
    if not job.result_key:
        raise NotFound(NO_FILE)
    _store_result(session, job)
    stamp = (job.completed_at or job.updated_at).strftime("%Y%m%d_%H%M%S")
    filename = f"{job.engine_slug}_{str(job.id)[:8]}_{stamp}.xlsx"
    url, expires_at = get_store().presigned_get(job.result_key, filename, get_settings().download_url_ttl_seconds)
    return Download(url=url, filename=filename, expires_at=expires_at)


# Concurrent first downloads of one job in this process wait for one another (a lock per key,
# striped); across processes both may calculate, and both put the same file under the same key.
_producing = [threading.Lock() for _ in range(64)]


def _store_result(session: Session, job: Job) -> None:
    """Store the job's filled workbook under its result key unless it is there: calculated again
    from the job's recorded inputs on its version, in this process, with the worker's code and
    model cache. NotFound when it cannot be (the version was deleted meanwhile)."""
    store = get_store()
    if store.exists(job.result_key):
        return
    with _producing[hash(job.result_key) % len(_producing)]:
        if store.exists(job.result_key):
            return
        version = engine_repo.get_version_any_tenant(session, version_id=job.version_id)
        if version is None:
            raise NotFound(NO_FILE)
        try:
            data = job_runner.filled_workbook(job, version)
        except (NotFound, WorkbookError, InputValidationError, ArithmeticError, LookupError, ValueError, TypeError) as exc:
            # The version's stored workbook is gone, or the job no longer calculates on it.
            log.warning("filled workbook of job %s could not be produced", job.id, exc_info=exc)
            raise NotFound(NO_FILE) from exc
        store.put(job.result_key, data, XLSX_CONTENT_TYPE)
