"""The worker's rules: claim a batch of jobs once, calculate them, finish them.

A batch of messages is claimed in one conditional UPDATE; the jobs of one version are calculated
one after another on the version's loaded model; their outcomes are written in one transaction
(one conditional update for all, the statistics rollups folded, the completion announced within
it), and then their webhooks are queued (``_after_finish``). The filled workbook is not written here: a completed job records the
key it will live under, and the first download produces it from the job's recorded inputs and
version (``filled_workbook``; ``shared.services.jobs.result_link``), unless the setting
``keep_filled_workbooks`` asks for it at once.

A message may arrive twice; the conditional claim (pending -> processing) makes the second
delivery a no-op. A job whose worker died stays claimed until its lease runs out, then a
redelivery may claim it again. Infrastructure failures hand the job back to pending and raise,
so the queue redelivers; calculation failures finish the job as failed with a generic message.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone

from shared.adapters import queues
from shared.adapters.storage import XLSX_CONTENT_TYPE, get_store, job_result_key
from shared.calc import fenced
from shared.config import get_settings
from shared.db.models import EngineVersion, Job, JobStatus
from shared.db.session import session_scope
from shared.db.types import utcnow
from shared.calc.fidelity import unimplemented
from shared.errors import (
    CalculationStopped, InputValidationError, NotFound, OutputsTooLarge, UnimplementedFunction, WorkbookError,
)
from shared.observability import bind_job, record_job_metrics, unbind_job
from shared.repositories import engines as engine_repo
from shared.repositories import jobs as job_repo
from shared.services import batch_completion, fair_claims, job_waits, output_limits, version_checks
from shared.services.inputs import date_inputs

log = logging.getLogger(__name__)

CALCULATION_FAILED = "The workbook could not be calculated with these inputs"
VERSION_GONE = "The engine version for this job is no longer available"
DEAD_LETTERED = "The job could not be processed"



def _model(version: EngineVersion, engine_name: str) -> fenced.Model:
    """The version's model as the fenced child asks for it: the engine's serialized model stored
    at upload, or (for another engine, or when that is unusable) the uploaded workbook, parsed
    in the child."""

    def load() -> tuple[str, bytes]:
        store = get_store()
        if version.prepared_key and version.prepared_key.endswith(f".{engine_name}"):
            try:
                return "serialized", store.get(version.prepared_key)
            except NotFound:
                log.warning("prepared model of version %s missing; parsing the workbook", version.id)
        return "xlsx", store.get(version.workbook_key)

    return fenced.Model(f"{version.id}:{engine_name}", engine_name, load)


def _output_names(version: EngineVersion) -> list[str] | None:
    props = (version.output_schema or {}).get("properties")
    return list(props) if isinstance(props, dict) and props else None


def calculate_jobs(version: EngineVersion, jobs: list[Job], *, engine: str | None = None, want_xlsx: bool = False) -> list[fenced.Result]:
    """The jobs' results on ``version`` (by ``engine``, default the version's), each with its
    inputs set on the version's model in the job's own run context (its clock and seed:
    reproducible runs), in a fenced child within the job budget: the one place a job is
    calculated, by the worker, for a filled workbook produced later and for a re-run."""
    specs = [job_spec(version, inputs=job.inputs or {}, job_id=job.id, created_at=job.created_at, want_xlsx=want_xlsx)
             for job in jobs]
    model = _model(version, engine or version.calc_engine)
    # Each lane has children of its own, so a slow version's job never holds a quick one's child.
    return fenced.calculator(version.lane).calculate(model, specs, fenced.Budget.for_jobs(get_settings()))


def job_spec(version: EngineVersion, *, inputs: dict, job_id: uuid.UUID, created_at: datetime,
             want_xlsx: bool = False) -> fenced.JobSpec:
    """What a job asks of the version's model: its inputs, the outputs its schema names, which
    inputs are dates, and its run context (also the library's: ``sheetcalc.Engine``)."""
    return fenced.JobSpec(inputs=inputs, outputs=_output_names(version), date_inputs=sorted(date_inputs(version.input_schema)),
                          job_id=str(job_id), created_at=_naive_utc(created_at).isoformat(), want_xlsx=want_xlsx)


def _naive_utc(moment: datetime) -> datetime:
    return moment.astimezone(timezone.utc).replace(tzinfo=None) if moment.tzinfo is not None else moment


def _calculate(job: Job, version: EngineVersion, result: fenced.Result) -> dict:
    """A job's outputs from its fenced result (``job_outputs``)."""
    return job_outputs(result, unimplemented_section=version_checks.unimplemented_for_jobs(version))


def job_outputs(result: fenced.Result, *, unimplemented_section: dict) -> dict:
    """A job's outputs from its calculation's result, checked against the version's
    unimplemented-functions section and the outputs the calculation flagged; raises what failed (the input plan's InputValidationError,
    CalculationStopped past the budget, UnimplementedFunction, OutputsTooLarge, WorkbookError).
    Also the library's (``sheetcalc.Engine``), which passes the section of its own report."""
    if result.outcome == "invalid":
        raise InputValidationError(result.message or "")
    if result.outcome == "budget":
        raise CalculationStopped(result.message or CALCULATION_FAILED)
    if result.outcome != "ok":
        raise WorkbookError(CALCULATION_FAILED)
    outputs = result.outputs or {}
    # Never a plausible value for an output an engine could not calculate (unimplemented.py).
    failure = unimplemented.output_failure(unimplemented_section, outputs) or unimplemented.flagged_failure(result.flagged)
    if failure is not None:
        raise UnimplementedFunction(failure)
    output_limits.check_job_outputs(outputs, get_settings())
    return outputs


def recalculate(job: Job, version: EngineVersion, engine: str | None = None) -> dict:
    """The job's outputs calculated again on ``version`` (by ``engine``, default the version's)."""
    return _calculate(job, version, calculate_jobs(version, [job], engine=engine)[0])


def filled_workbook(job: Job, version: EngineVersion) -> bytes:
    """The job's filled workbook: its recorded inputs calculated again on its version by the
    engine that calculated the job, exported as the worker would have right after the job."""
    result = calculate_jobs(version, [job], engine=job.calc_engine, want_xlsx=True)[0]
    _calculate(job, version, result)
    return result.xlsx or b""


@dataclass
class Batch:
    """The outcome of ``run_jobs``: each job's final status (None when it was not ours), and the
    jobs whose message must come again (a transient failure: the job was handed back, or its
    webhook could not be queued)."""

    statuses: dict[uuid.UUID, str | None] = field(default_factory=dict)
    retry: dict[uuid.UUID, BaseException] = field(default_factory=dict)


def run_job(job_id: uuid.UUID) -> str | None:
    """Process one job message; returns the job's final status, or None when it was not ours."""
    batch = run_jobs([job_id])
    if job_id in batch.retry:
        raise batch.retry[job_id]
    return batch.statuses.get(job_id)


def run_jobs(job_ids: list[uuid.UUID], *, lane: str = "standard") -> Batch:
    """Process a batch of job messages: claim them all at once, calculate the claimed jobs of each
    version on one loaded model, finish them in one transaction, then queue their webhooks.

    A job already handled (or unknown) is a no-op, as a second message for it must be. Raises
    only when the batch's claim or its finish could not be written: then nothing of it counts.
    """
    settings = get_settings()
    job_ids = list(dict.fromkeys(job_ids))  # a message twice in one batch: computed once
    batch = Batch(statuses=dict.fromkeys(job_ids))
    with session_scope() as session:
        # Each tenant up to its share of workers (tenant_max_concurrent_jobs); its other jobs wait.
        claim = fair_claims.claim(session, job_ids=job_ids, lease_seconds=settings.processing_lease_seconds)
        claimed_at, jobs = claim.claimed_at, claim.jobs
        versions = {v: engine_repo.get_version_to_calculate(session, version_id=v) for v in {job.version_id for job in jobs}}
    claimed = {job.id for job in jobs}
    for job_id in job_ids:
        if job_id not in claimed and job_id not in claim.deferred:
            log.info("job %s already handled or unknown; skipping", job_id)
            _handled_already(job_id, batch)
    if claim.deferred:
        # Queued again a little later, on the lane its message came on (a message that could not
        # be sent comes again itself).
        batch.retry.update(fair_claims.defer(claim.deferred, lane=lane))

    outcomes: list[tuple[Job, dict, float | None]] = []
    try:
        for version_id, group in _by_version(jobs):
            outcomes += _calculate_group(group, versions[version_id], claimed_at, batch, keep=settings.keep_filled_workbooks)
    except BaseException:
        # Interrupted (not a failure of one job): hand back every claimed job not yet finished.
        _release([job.id for job in jobs], claimed_at)
        raise

    try:
        with session_scope() as session:
            at = utcnow()
            finished = job_repo.finish_many(
                session, claimed_at=claimed_at, outcomes=[(job.id, values) for job, values, _ in outcomes], now=at
            )
            states = {str(job.id): job_waits.finished_state(values, at) for job, values, _ in outcomes if job.id in finished}
            job_waits.announce_on_commit(session, finished, states)
    except BaseException:
        hand_back_after_failed_finish(lambda: _release([job.id for job in jobs], claimed_at))
        raise
    _after_finish([(job, values, calc_ms) for job, values, calc_ms in outcomes if job.id in finished], batch)
    return batch


def _by_version(jobs: list[Job]) -> list[tuple[uuid.UUID, list[Job]]]:
    groups: dict[uuid.UUID, list[Job]] = {}
    for job in jobs:
        groups.setdefault(job.version_id, []).append(job)
    return list(groups.items())


def _calculate_group(
    jobs: list[Job], version: EngineVersion | None, claimed_at: datetime, batch: Batch, *, keep: bool
) -> list[tuple[Job, dict, float | None]]:
    """The outcome of each job of one version, calculated one after another on the version's
    model in a fenced child; a job that failed transiently is handed back and left out (all of
    them when the model could not be had)."""
    if version is None:
        return [(job, dict(status=JobStatus.FAILED, error_message=VERSION_GONE), None) for job in jobs]
    try:
        results = calculate_jobs(version, jobs, want_xlsx=keep)
    except Exception as exc:
        return [(job, values, None) for job in jobs if (values := _failure(job, exc, claimed_at, batch)) is not None]
    outcomes = []
    for job, result in zip(jobs, results):
        values = _outcome(job, version, result, claimed_at, batch, keep=keep)
        if values is not None:
            outcomes.append((job, values, result.calc_ms))
    return outcomes


def _outcome(job: Job, version: EngineVersion, result: fenced.Result, claimed_at: datetime, batch: Batch, *, keep: bool) -> dict | None:
    """One job's outcome (None when it was handed back)."""
    bind_job(job)
    try:
        outputs = _calculate(job, version, result)
        result_key = job_result_key(job.tenant_id, job.id)
        if keep:
            get_store().put(result_key, result.xlsx or b"", XLSX_CONTENT_TYPE)
        log.info("job %s completed in %.1f ms of calculation", job.id, result.calc_ms)
        # calc_engine: the engine that calculated it (reproducible runs; the file made later uses it too)
        return dict(status=JobStatus.COMPLETED, outputs=outputs, result_key=result_key, calc_engine=version.calc_engine,
                    execution_time_ms=round(result.calc_ms))
    except Exception as exc:
        return _failure(job, exc, claimed_at, batch)
    finally:
        unbind_job()


def failed_calculation(job: Job, exc: Exception) -> dict | None:
    """The failed outcome of a calculation that raised ``exc``, when another delivery would fail
    the same way; None when the failure may be transient (storage, database, ...)."""
    if isinstance(exc, (InputValidationError, CalculationStopped, OutputsTooLarge, UnimplementedFunction)):
        # the consumer's to know: the input refused, or the limit the calculation passed
        return dict(status=JobStatus.FAILED, error_message=exc.message)
    if isinstance(exc, (WorkbookError, ArithmeticError, LookupError, ValueError, TypeError)):
        log.error("job %s failed to calculate", job.id, exc_info=exc)
        return dict(status=JobStatus.FAILED, error_message=CALCULATION_FAILED)
    return None


def _failure(job: Job, exc: Exception, claimed_at: datetime, batch: Batch) -> dict | None:
    """A failed job's outcome; None when the failure is transient and the job was handed back."""
    failed = failed_calculation(job, exc)
    if failed is not None:
        return failed
    # Storage, database or anything transient: hand the job back and let the queue redeliver.
    log.warning("job %s handed back after a transient failure", job.id, exc_info=exc)
    _release([job.id], claimed_at)
    batch.retry[job.id] = exc
    return None


def _release(job_ids: list[uuid.UUID], claimed_at: datetime) -> None:
    with session_scope() as session:
        for job_id in job_ids:
            job_repo.release_claim(session, job_id=job_id, claimed_at=claimed_at)


def hand_back_after_failed_finish(release: Callable[[], None]) -> None:
    """After a finish that was not written (its transaction raised), ``release`` the claim it
    held, so that the redelivery (a visibility timeout later) claims and computes the jobs again
    instead of finding them processing and waiting out their lease (``processing_lease_seconds``,
    15 minutes by default, then the sweeper). Releases are conditional on the claim, so a finish
    that did commit before its answer was lost leaves its jobs finished. When the database
    refuses this too (it is down), the jobs stay claimed and their lease brings them back."""
    try:
        release()
    except Exception:
        log.warning("could not hand back the jobs whose finish failed; their lease will", exc_info=True)


def _after_finish(finished: list[tuple[Job, dict, float | None]], batch: Batch) -> None:
    """What follows a batch's finish commit, for the jobs it finished (their waiters were woken by
    the commit): their metrics, their webhooks."""
    for job, values, calc_ms in finished:
        batch.statuses[job.id] = values["status"]
        record_job_metrics(values["status"], None if calc_ms is None else round(calc_ms))
        if job.webhook_url:
            try:
                queues.enqueue_webhook(job.id)
            except Exception as exc:
                # The job stays finished; its message comes again and queues the webhook then.
                batch.retry[job.id] = exc
    # A consumer batch's job computed through its own message (its chunk's message was lost and
    # the sweeper queued the job again): the batch may be done now.
    for batch_id in dict.fromkeys(job.batch_id for job, _, _ in finished if job.batch_id is not None):
        try:
            batch_completion.complete_if_done(batch_id)
        except Exception as exc:
            # Its jobs' messages come again (handled already: _handled_already completes it then).
            batch.retry.update({job.id: exc for job, _, _ in finished if job.batch_id == batch_id})


def _handled_already(job_id: uuid.UUID, batch: Batch) -> None:
    try:
        _requeue_lost_webhook(job_id)
    except Exception as exc:
        batch.retry[job_id] = exc


def _requeue_lost_webhook(job_id: uuid.UUID) -> None:
    # A finished job whose webhook was never attempted lost its webhook message (the queue was
    # down right after it finished); the redelivered job message queues it again. The webhook
    # sender's own claim keeps the POST to at most one whatever the number of messages.
    with session_scope() as session:
        job = job_repo.get_job(session, job_id=job_id)
        finished = job is not None and job.status in (JobStatus.COMPLETED, JobStatus.FAILED)
        lost = finished and job.webhook_url and job.webhook_sent_at is None
        batch_id = job.batch_id if finished else None
    if lost:
        queues.enqueue_webhook(job_id)
    if batch_id is not None:
        batch_completion.complete_if_done(batch_id)  # a no-op once the batch is done


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
    if failed:
        job_waits.announce([key])
    if job is not None and job.webhook_url:
        queues.enqueue_webhook(key)
    if job is not None and job.batch_id is not None:
        batch_completion.complete_if_done(job.batch_id)
