"""Claims whose process is gone: handed back at once instead of a lease later.

Each claim names the process that made it (``jobs.claimant``, ``shared.claimants``). A process
of this machine that no longer runs (a dev stack killed with ``kill -9``, its workers with it)
will never finish what it claimed, so its jobs go back to pending and are queued again, as the
sweeper queues a job whose lease ran out. ``sheetcalc dev`` does this at start, before its
workers run, and every sweep does it too. Claims made elsewhere (another machine, container or
boot; on AWS, every Lambda sandbox is a machine of its own) are never judged here: their lease
(``processing_lease_seconds``) brings them back. Kept apart from the sweeper so the dev stack's
parent process runs it without importing the version checks.
"""

from __future__ import annotations

import logging

from shared import claimants
from shared.adapters import queues
from shared.db.session import session_scope
from shared.repositories import jobs as job_repo

log = logging.getLogger(__name__)


def release() -> int:
    """Hand back to pending, and queue again, the jobs processing on claims of processes of this
    machine (host, PID namespace, boot) that no longer run; returns how many."""
    place = claimants.here()
    with session_scope() as session:
        held = job_repo.claimants_at(session, place=place)
        dead = [claimant for claimant in held if claimants.gone(claimant, place=place)]
        released = job_repo.release_claims_of(session, claimants_gone=dead)
        lanes = job_repo.lanes_of(session, job_ids=[job_id for job_id, _ in released])
    for job_id, tenant_id in released:
        queues.enqueue_job(job_id, tenant_id=tenant_id, lane=lanes.get(job_id, "standard"))
    if released:
        log.warning("handed back %d jobs claimed by %d processes of this machine that are gone", len(released), len(dead))
    return len(released)
