"""The worker's rules: claim a job once, calculate it, store the filled workbook, finish it.

A message may arrive twice; the conditional claim (pending -> processing) makes the second
delivery a no-op. A job whose worker died stays claimed until its lease runs out, then a
redelivery may claim it again. Infrastructure failures hand the job back to pending and raise,
so the queue redelivers; calculation failures finish the job as failed with a generic message.
"""

from __future__ import annotations

import logging
import time
import uuid

from shared import calc
from shared.adapters import queues
from shared.adapters.storage import XLSX_CONTENT_TYPE, get_store, job_result_key
from shared.config import get_settings
from shared.db.models import EngineVersion, Job, JobStatus
from shared.db.session import session_scope
from shared.db.types import utcnow
from shared.errors import InputValidationError, NotFound, WorkbookError
from shared.observability import bind_job, record_job_metrics
from shared.repositories import engines as engine_repo
from shared.repositories import jobs as job_repo
from shared.services.inputs import date_inputs

log = logging.getLogger(__name__)

CALCULATION_FAILED = "The workbook could not be calculated with these inputs"
VERSION_GONE = "The engine version for this job is no longer available"
DEAD_LETTERED = "The job could not be processed"

_cache: calc.ModelCache | None = None


def model_cache() -> calc.ModelCache:
    """The process's cache of loaded workbooks, one per version."""
    global _cache
    if _cache is None:
        _cache = calc.ModelCache(get_settings().model_cache_size)
    return _cache


def _loader(version: EngineVersion):
    def load() -> calc.Workbook:
        engine = calc.get_engine(version.calc_engine)
        store = get_store()
        if version.prepared_key:
            try:
                return engine.load_serialized(store.get(version.prepared_key))
            except (NotFound, WorkbookError):
                log.warning("prepared model of version %s unusable; parsing the workbook", version.id)
        return engine.load_xlsx(store.get(version.workbook_key))

    return load


def _output_names(version: EngineVersion) -> list[str] | None:
    props = (version.output_schema or {}).get("properties")
    return list(props) if isinstance(props, dict) and props else None


def _calculate(job: Job, version: EngineVersion) -> tuple[dict, bytes, float]:
    started = time.perf_counter()
    # Keyed by engine too: a version whose engine an administrator changes is loaded afresh.
    with model_cache().checkout(f"{version.id}:{version.calc_engine}", _loader(version)) as workbook:
        outputs = workbook.calculate(job.inputs, outputs=_output_names(version), date_inputs=date_inputs(version.input_schema))
        filled = workbook.to_xlsx()
    return outputs, filled, (time.perf_counter() - started) * 1000


def run_job(job_id: uuid.UUID) -> str | None:
    """Process one job message; returns the job's final status, or None when it was not ours."""
    settings = get_settings()
    with session_scope() as session:
        claimed_at = job_repo.claim_for_processing(session, job_id=job_id, lease_seconds=settings.processing_lease_seconds)
        job = job_repo.get_job(session, job_id=job_id) if claimed_at else None
        version = engine_repo.get_version_any_tenant(session, version_id=job.version_id) if job else None
    if claimed_at is None or job is None:
        log.info("job %s already handled or unknown; skipping", job_id)
        _requeue_lost_webhook(job_id)
        return None
    bind_job(job)
    calc_ms: float | None = None

    values: dict
    try:
        if version is None:
            values = dict(status=JobStatus.FAILED, error_message=VERSION_GONE)
        else:
            outputs, filled, calc_ms = _calculate(job, version)
            result_key = job_result_key(job.tenant_id, job.id)
            get_store().put(result_key, filled, XLSX_CONTENT_TYPE)
            values = dict(
                status=JobStatus.COMPLETED,
                outputs=outputs,
                result_key=result_key,
                execution_time_ms=round((utcnow() - claimed_at).total_seconds() * 1000),
            )
            log.info("job %s completed in %.1f ms of calculation", job_id, calc_ms)
    except InputValidationError as exc:
        values = dict(status=JobStatus.FAILED, error_message=exc.message)
    except (WorkbookError, ArithmeticError, LookupError, ValueError, TypeError):
        # Deterministic: another delivery would fail the same way.
        log.exception("job %s failed to calculate", job_id)
        values = dict(status=JobStatus.FAILED, error_message=CALCULATION_FAILED)
    except BaseException:
        # Storage, database or anything transient: hand the job back and let the queue redeliver.
        with session_scope() as session:
            job_repo.release_claim(session, job_id=job_id, claimed_at=claimed_at)
        raise

    with session_scope() as session:
        finished = job_repo.finish(session, job_id=job_id, claimed_at=claimed_at, **values)
    if not finished:
        return None
    record_job_metrics(values["status"], None if calc_ms is None else round(calc_ms))
    if job.webhook_url:
        queues.enqueue_webhook(job_id)
    return values["status"]


def _requeue_lost_webhook(job_id: uuid.UUID) -> None:
    # A finished job whose webhook was never attempted lost its webhook message (the queue was
    # down right after it finished); the redelivered job message queues it again. The webhook
    # sender's own claim keeps the POST to at most one whatever the number of messages.
    with session_scope() as session:
        job = job_repo.get_job(session, job_id=job_id)
        lost = (
            job is not None and job.webhook_url and job.webhook_sent_at is None
            and job.status in (JobStatus.COMPLETED, JobStatus.FAILED)
        )
    if lost:
        queues.enqueue_webhook(job_id)


def fail_dead_lettered(job_id: str) -> None:
    """Fail a job whose message exhausted its deliveries, and send its webhook if one was asked for."""
    try:
        key = uuid.UUID(str(job_id))
    except ValueError:
        log.error("dead letter with a malformed job id %r", job_id)
        return
    with session_scope() as session:
        failed = job_repo.fail_unfinished(session, job_id=key, message=DEAD_LETTERED)
        job = job_repo.get_job(session, job_id=key) if failed else None
    if job is not None and job.webhook_url:
        queues.enqueue_webhook(key)
