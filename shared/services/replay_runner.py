"""The worker's side of shadow replays: one message takes a replay, calculates its recorded jobs'
inputs on the candidate version chunk by chunk, compares them in bulk and writes the report once.

Like a batch's chunk, the replay's jobs are calculated by ``job_runner.calculate_jobs`` (the
fenced children, the job budget, the lane's children) in each recorded job's own run context
(its id and time: NOW, TODAY and RAND as they were), so an unchanged workbook replays identical.
No job row is made or changed: nothing of a replay reaches a consumer, a job list or the
statistics (nor the job metrics: ``record_job_metrics`` is the finish's, not the calculation's).

Fair share: a replay holds one worker while it runs and counts as one of its tenant's
(``tenant_max_concurrent_jobs``, with its jobs and its batches' chunks: ``fair_claims``): it
starts only while its tenant has room (its claim counted again with the tenant's claims
serialized, and rolled back if a job or a chunk took that room meanwhile), and between chunks
it hands itself on (what it compared kept in the row, ``replays.state``) when its tenant's
production work filled that room, queued again ``tenant_cap_retry_seconds`` later. A message also
hands on after ``within_s`` seconds, so no message outlives the worker's timeout. The claim
(``claimed_at``, conditional like a job's) makes a redelivered message a no-op while another
worker holds the replay; a claim older than the lease is taken over.
"""

from __future__ import annotations

import logging
import time
import uuid

from shared.adapters import queues
from shared.config import get_settings
from shared.db.models import ReplayStatus
from shared.db.session import session_scope
from shared.repositories import engines as engine_repo
from shared.repositories import replays as repo
from shared.services import fair_claims, job_runner
from shared.services.output_compare import Tolerance
from shared.services.replay_report import Accumulator

log = logging.getLogger(__name__)

CHUNK = 500
MESSAGE_SECONDS = 120.0  # the worker's timeout is 300 s (template.yaml)
VERSION_GONE = "The version to replay on is no longer available"
GIVEN_UP = "The replay could not be processed"


def tolerances_of(stored: dict | None) -> tuple[dict[str, Tolerance], Tolerance]:
    """The per-output tolerances and the default one, as the replay's row keeps them."""
    stored = stored or {}
    default = Tolerance(**(stored.get("default") or {}))
    return {name: Tolerance(**t) for name, t in (stored.get("outputs") or {}).items()}, default


def _tenant_full(session, tenant_id: uuid.UUID, replay_id: uuid.UUID, *, just_claimed: bool = False) -> bool:
    """Whether the tenant's workers are all busy on its jobs, its batches' chunks and its other
    replays (this one aside): ``fair_claims.replay_may_run``."""
    return not fair_claims.replay_may_run(session, tenant_id=tenant_id, replay_id=replay_id, just_claimed=just_claimed)


def _queue_again(replay_id: uuid.UUID, tenant_id: uuid.UUID, lane: str, delay: int = 0) -> None:
    queues.enqueue_replay(replay_id, tenant_id=tenant_id, lane=lane, delay_seconds=delay)


def run(replay_id: uuid.UUID, *, within_s: float = MESSAGE_SECONDS, chunk_size: int = CHUNK) -> str | None:
    """Go on with a replay; returns what this message did: "completed", "handed_on",
    "deferred", "failed", or None when the replay was not ours (finished, held, unknown)."""
    settings = get_settings()
    began = time.monotonic()
    with session_scope() as session:
        replay = repo.get_by_id(session, replay_id=replay_id)
        if replay is None or replay.status not in repo.UNFINISHED:
            return None
        tenant_id = replay.tenant_id
        if _tenant_full(session, tenant_id, replay_id):
            deferred = True
        else:
            deferred = False
            claimed_at = repo.claim(session, replay_id=replay_id, lease_seconds=settings.processing_lease_seconds)
            if claimed_at is None:
                return None
            version_id = replay.version_id
            job_ids = [uuid.UUID(j) for j in replay.job_ids]
            position, state = replay.processed, replay.state
            tolerances, default = tolerances_of(replay.tolerance)
            if _tenant_full(session, tenant_id, replay_id, just_claimed=True):
                session.rollback()  # a job or a chunk of its tenant's took the last room at the same time
                deferred = True
            else:
                version = engine_repo.get_version_to_calculate(session, version_id=version_id)
                chunk_size = _chunk_size(version, chunk_size) if version is not None else chunk_size
    if deferred:
        lane = _lane(replay_id)
        _queue_again(replay_id, tenant_id, lane, settings.tenant_cap_retry_seconds)
        return "deferred"
    if version is None:
        with session_scope() as session:
            repo.fail(session, replay_id=replay_id, message=VERSION_GONE)
        return "failed"

    acc = Accumulator.from_state(state, tolerances=tolerances, default=default)
    try:
        while position < len(job_ids):
            ids = job_ids[position:position + chunk_size]
            _compare_chunk(acc, ids, version, tenant_id)
            position += len(ids)
            if position >= len(job_ids):
                break
            with session_scope() as session:
                full = _tenant_full(session, tenant_id, replay_id)
                if full or time.monotonic() - began > within_s:
                    if repo.hand_on(session, replay_id=replay_id, claimed_at=claimed_at, processed=position, state=acc.state()):
                        session.commit()
                        _queue_again(replay_id, tenant_id, version.lane, settings.tenant_cap_retry_seconds if full else 0)
                        return "handed_on"
                    return None
                if not repo.progress(session, replay_id=replay_id, claimed_at=claimed_at, processed=position):
                    return None  # another worker took it over (our lease ran out)
    except BaseException:
        # Storage or the database failed (not a job): keep what was compared, let the message come again.
        _hand_back(replay_id, claimed_at, position, acc)
        raise
    with session_scope() as session:
        repo.finish(session, replay_id=replay_id, claimed_at=claimed_at, processed=position, report=acc.report())
    log.info("replay %s completed: %d cases", replay_id, acc.seen)
    return "completed"


def _chunk_size(version, largest: int) -> int:
    """About ten seconds of calculation per chunk by the version's measured cost (at most
    ``largest`` jobs), so that progress is recorded well within the lease."""
    p95 = (version.cost or {}).get("calc_ms_p95")
    if not isinstance(p95, (int, float)) or p95 <= 0:
        return largest
    return max(1, min(largest, int(10_000 / p95)))


def _lane(replay_id: uuid.UUID) -> str:
    with session_scope() as session:
        replay = repo.get_by_id(session, replay_id=replay_id)
        version = engine_repo.get_version_to_calculate(session, version_id=replay.version_id) if replay else None
        return version.lane if version is not None else "standard"


def _compare_chunk(acc: Accumulator, ids: list[uuid.UUID], version, tenant_id: uuid.UUID) -> None:
    """Calculate a chunk of recorded jobs on the candidate and add them to the report, all or none."""
    with session_scope() as session:
        jobs = repo.jobs_by_ids(session, tenant_id=tenant_id, job_ids=ids)  # a job deleted since is left out
    if not jobs:
        return
    cases = []
    for job, result in zip(jobs, job_runner.calculate_jobs(version, jobs)):
        try:
            cases.append((job, job_runner._calculate(job, version, result), None))
        except Exception as exc:
            failed = job_runner.failed_calculation(job, exc)
            if failed is None:
                raise  # transient: the message comes again
            cases.append((job, None, failed["error_message"]))
    for job, got, error in cases:
        acc.add(job_id=str(job.id), inputs=job.inputs or {}, recorded=job.outputs or {}, got=got, error=error)


def _hand_back(replay_id: uuid.UUID, claimed_at, position: int, acc: Accumulator) -> None:
    try:
        with session_scope() as session:
            repo.hand_on(session, replay_id=replay_id, claimed_at=claimed_at, processed=position, state=acc.state())
    except Exception:
        log.warning("could not hand back replay %s; its lease will", replay_id, exc_info=True)


def give_up(replay_id: uuid.UUID) -> bool:
    """End a replay whose message ran out of deliveries as failed."""
    with session_scope() as session:
        return repo.fail(session, replay_id=replay_id, message=GIVEN_UP)


def status_of(replay_id: uuid.UUID) -> ReplayStatus | None:
    with session_scope() as session:
        replay = repo.get_by_id(session, replay_id=replay_id)
        return replay.status if replay else None
