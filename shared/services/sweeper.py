"""The sweeper: queue again the work whose message was lost, so that accepted work always ends.

A job's row is committed before its message is sent, and a finished job's webhook message (or a
new version's check message) is sent after its row changed: a crash between the two, a queue
outage or a dev stack restarted with empty queues leaves a row that nothing will ever pick up.
``sweep`` finds those rows and sends their messages again:

- jobs pending since longer than ``sweeper_requeue_after_seconds``, and jobs processing on a
  claim older than ``processing_lease_seconds`` (their worker died);
- webhooks of jobs finished that long ago whose single attempt never began;
- version checks (engine checks, document-library copy) pending for ``sweeper_checks_after_seconds``;
- jobs processing on a claim of a process of this machine that no longer runs
  (``dead_claims.release``, also run by ``sheetcalc dev`` at start, before its workers): a stack
  killed with ``kill -9`` and started again computes them at once, not a lease later. On AWS
  each Lambda sandbox is a machine of its own, so there this finds nothing: the lease (the worker's
  timeout and a margin, template.yaml) is what brings a dead worker's jobs back.

A job queued again is made pending as of now (a claim past its lease is released), so the
following sweeps leave it to that message instead of adding one each. A message sent twice is
harmless anyway, which is what makes this safe: the worker's claim (pending -> processing)
computes a job once per lease, and the webhook sender records its single attempt before the
POST, so a webhook whose attempt may have begun is never picked again. On AWS a schedule runs ``functions.sweeper.app``; ``sheetcalc
dev`` runs it at start (everything from before the start: its queues began empty) and on a timer.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta

from shared.adapters import queues
from shared.config import get_settings
from shared.db.session import session_scope
from shared.db.types import utcnow
from shared.repositories import engines as engine_repo
from shared.repositories import jobs as job_repo
from shared.services import dead_claims
from shared.services.version_checks import has_pending_work

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Swept:
    """How many messages one sweep sent again, by kind."""

    jobs: int = 0
    webhooks: int = 0
    version_checks: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def sweep(*, queues_empty_since: datetime | None = None) -> Swept:
    """Queue again every job, webhook and version check whose message may have been lost.

    ``queues_empty_since``: the queues are known to hold no message from before this time (the
    dev stack passes its start): everything due before it is queued again, without a batch limit.
    Otherwise the settings' ages apply and each kind sends at most ``sweeper_batch_size``.
    """
    settings = get_settings()
    now = utcnow()
    if queues_empty_since is not None:
        due_before = checks_due_before = queues_empty_since
        limit = None
    else:
        due_before = now - timedelta(seconds=settings.sweeper_requeue_after_seconds)
        checks_due_before = now - timedelta(seconds=settings.sweeper_checks_after_seconds)
        limit = settings.sweeper_batch_size
    claimed_before = now - timedelta(seconds=settings.processing_lease_seconds)

    released = dead_claims.release()
    with session_scope() as session:
        jobs = job_repo.requeue_unqueued(session, pending_before=due_before, claimed_before=claimed_before, limit=limit)
        lanes = job_repo.lanes_of(session, job_ids=[job_id for job_id, _ in jobs])
        webhook_job_ids = job_repo.unattempted_webhook_job_ids(session, finished_before=due_before, limit=limit)
        version_ids = [
            version_id
            for version_id, report, storage in engine_repo.background_work_of_versions(session, created_before=checks_due_before)
            if has_pending_work(report, storage)
        ][:limit]

    for job_id, tenant_id in jobs:
        queues.enqueue_job(job_id, tenant_id=tenant_id, lane=lanes.get(job_id, "standard"))
    for job_id in webhook_job_ids:
        queues.enqueue_webhook(job_id)
    for version_id in version_ids:
        queues.enqueue_version_check(version_id)
    swept = Swept(jobs=released + len(jobs), webhooks=len(webhook_job_ids), version_checks=len(version_ids))
    if jobs or webhook_job_ids or version_ids:
        log.warning("sweeper queued again %s", swept.as_dict())
    return swept
