"""The worker's side of batches: one message computes one chunk of a batch's jobs on one model.

The chunk's pending jobs are claimed in one conditional update, calculated one after another on
the version's loaded workbook, and finished in one transaction (each finish conditional on the
claim), so a redelivered message skips the jobs already finished and no job is computed twice.
Like every job, a batch job's filled workbook is made when it is first downloaded. A failure of
storage or the database hands the chunk back and raises, so the queue redelivers.
A chunk is one worker of its tenant's share (``tenant_max_concurrent_jobs``): while its tenant has
its share busy, the chunk waits, queued again (``shared.services.fair_claims``).
After every chunk the batch is marked done once none of its jobs is left, and its webhook is
sent then: reserved before the POST, at most once (shared/services/batch_completion.py, which the
job path also calls for a batch's job that a swept job message computed).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from shared.adapters.storage import job_result_key
from shared.config import get_settings
from shared.db.models import JobStatus
from shared.db.session import session_scope
from shared.repositories import batches as batch_repo
from shared.repositories import engines as engine_repo
from shared.services import fair_claims, job_runner, job_waits
from shared.services.batch_completion import complete_if_done
from shared.services.job_runner import DEAD_LETTERED, VERSION_GONE, failed_calculation

log = logging.getLogger(__name__)


def run_chunk(batch_id: uuid.UUID, chunk: int, *, lane: str = "standard") -> int:
    """Compute the chunk's unfinished jobs; returns how many this delivery finished. A chunk whose
    tenant has its share of the workers busy (``fair_claims.claim_chunk``) computes nothing: it is
    queued again a little later on ``lane`` (the one its message came on), and this message is done."""
    settings = get_settings()
    with session_scope() as session:
        batch = batch_repo.get(session, batch_id=batch_id)
        if batch is None:
            log.error("batch %s unknown; dropping chunk %d", batch_id, chunk)
            return 0
        tenant_id = batch.tenant_id
        first, end = chunk * batch.chunk_size, (chunk + 1) * batch.chunk_size
        claim = fair_claims.claim_chunk(
            session, batch_id=batch_id, tenant_id=tenant_id, first=first, end=end, lease_seconds=settings.processing_lease_seconds
        )
        claimed_at, jobs = claim.claimed_at, claim.jobs
        version = engine_repo.get_version_to_calculate(session, version_id=batch.version_id) if jobs else None
    if claim.deferred:
        # Not a failed delivery (those count towards the dead-letter limit): a new message, later.
        fair_claims.defer_chunk(batch_id, chunk, tenant_id=tenant_id, lane=lane)
        return 0
    finished = 0
    if jobs:
        try:
            outcomes = _calculate(jobs, version)
        except BaseException:
            _release_chunk(batch_id, first, end, claimed_at)
            raise
        try:
            with session_scope() as session:
                finished = batch_repo.finish_chunk(
                    session, batch_id=batch_id, first=first, end=end, claimed_at=claimed_at, outcomes=outcomes,
                )
        except BaseException:
            job_runner.hand_back_after_failed_finish(lambda: _release_chunk(batch_id, first, end, claimed_at))
            raise
        job_waits.announce([outcome["id"] for outcome in outcomes])  # GET /jobs/{id}?wait= on a batch's job
        log.info("batch %s chunk %d: %d jobs finished", batch_id, chunk, finished)
    complete_if_done(batch_id)
    return finished


def _release_chunk(batch_id: uuid.UUID, first: int, end: int, claimed_at) -> None:
    with session_scope() as session:
        batch_repo.release_chunk(session, batch_id=batch_id, first=first, end=end, claimed_at=claimed_at)


def give_up_chunk(batch_id: uuid.UUID, chunk: int) -> int:
    """Fail the unfinished jobs of a chunk whose message exhausted its deliveries (then the batch
    may be done: its webhook goes out); returns how many were failed."""
    with session_scope() as session:
        batch = batch_repo.get(session, batch_id=batch_id)
        if batch is None:
            return 0
        failed = batch_repo.fail_chunk(
            session, batch_id=batch_id, first=chunk * batch.chunk_size, end=(chunk + 1) * batch.chunk_size, message=DEAD_LETTERED
        )
    complete_if_done(batch_id)
    return failed


def _calculate(jobs: list, version) -> list[dict[str, Any]]:
    if version is None:
        return [dict(id=job.id, status=JobStatus.FAILED, error_message=VERSION_GONE) for job in jobs]
    engine = version.calc_engine
    outcomes = []
    # A transient failure (the model's bytes could not be read) raises: the chunk's message comes again.
    for job, result in zip(jobs, job_runner.calculate_jobs(version, jobs)):
        try:
            outputs = job_runner._calculate(job, version, result)
            # The filled workbook is made on first download from the job's inputs (job_runner.filled_workbook).
            outcome = dict(
                status=JobStatus.COMPLETED, outputs=outputs, calc_engine=engine, result_key=job_result_key(job.tenant_id, job.id),
            )
        except Exception as exc:
            outcome = failed_calculation(job, exc)
            if outcome is None:
                raise  # transient: the chunk's message comes again
        outcome.update(id=job.id, execution_time_ms=round(result.calc_ms))
        outcomes.append(outcome)
    return outcomes
