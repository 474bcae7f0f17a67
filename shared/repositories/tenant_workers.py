"""What a tenant's workers are busy on, as the per-tenant cap counts it, and the lock that
serializes the cap's recounts (``shared.services.fair_claims``).

A worker is busy for a tenant on a live claim (made within the lease) of
- a single job processing (execute, test-execute, or a batch's job a swept message brought): one each;
- a chunk of a batch processing: one, however many jobs it holds (its jobs are calculated one
  after another by one worker, and all claimed at one moment: their ``started_at``);
- a shadow replay running: one.

One statement counts them: the jobs from ix_jobs_tenant_processing (the predicate written as the
partial index's, so PostgreSQL's generic plans use it), the replays by their tenant. A chunk's
jobs are told apart by their batch: processing jobs of batches are counted once per claim time.
Two claims of one tenant's batch jobs made in the same microsecond count as one (a moment's
undercount, never an overcount).
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import bindparam, case, distinct, func, select, text, union_all
from sqlalchemy.engine import Connection

from shared.db.models import PROCESSING_JOBS_SQL, Job, Replay, ReplayStatus

JOBS = Job.__table__
REPLAYS = Replay.__table__
# No replay has this id: "leave no replay out".
NO_REPLAY = uuid.UUID(int=0)

_HELD = JOBS.alias("held")
_LIVE_REPLAYS = REPLAYS.alias("live_replays")


def _jobs_workers(held):
    """The workers busy on ``held``'s rows (an aggregate): a single job each, a chunk's jobs once."""
    return (
        func.count(case((held.c.batch_id.is_(None), 1)))
        + func.count(distinct(case((held.c.batch_id.is_not(None), held.c.started_at))))
    )


def busy(tenant_id, stale, except_replay):
    """The workers busy for ``tenant_id`` (a column to correlate to, or a bound parameter) on
    claims made at or after ``stale``, the replay ``except_replay`` left out: a scalar SQL expression."""
    jobs = (
        select(_jobs_workers(_HELD))
        .where(_HELD.c.tenant_id == tenant_id, text(f"held.{PROCESSING_JOBS_SQL}"), _HELD.c.started_at >= stale)
        .scalar_subquery()
    )
    replays = (
        select(func.count()).select_from(_LIVE_REPLAYS)
        .where(_LIVE_REPLAYS.c.tenant_id == tenant_id, _LIVE_REPLAYS.c.status == ReplayStatus.RUNNING,
               _LIVE_REPLAYS.c.claimed_at >= stale, _LIVE_REPLAYS.c.id != except_replay)
        .scalar_subquery()
    )
    return jobs + replays


# Each of some tenants' busy workers, as rows of (tenant, n) to sum: its jobs', its replays'.
_BY_TENANT = union_all(
    select(JOBS.c.tenant_id, _jobs_workers(JOBS).label("n"))
    .where(JOBS.c.tenant_id.in_(bindparam("tenants", expanding=True)), text(PROCESSING_JOBS_SQL),
           JOBS.c.started_at >= bindparam("stale"))
    .group_by(JOBS.c.tenant_id),
    select(REPLAYS.c.tenant_id, func.count().label("n"))
    .where(REPLAYS.c.tenant_id.in_(bindparam("tenants", expanding=True)), REPLAYS.c.status == ReplayStatus.RUNNING,
           REPLAYS.c.claimed_at >= bindparam("stale"), REPLAYS.c.id != bindparam("except_replay"))
    .group_by(REPLAYS.c.tenant_id),
)


def count(connection: Connection, *, tenants: list[uuid.UUID], stale: datetime,
          except_replay: uuid.UUID = NO_REPLAY) -> dict[uuid.UUID, int]:
    """The workers busy for each of ``tenants`` on claims made at or after ``stale`` (a tenant
    with none is left out), the replay ``except_replay`` left out; one statement."""
    if not tenants:
        return {}
    counted: dict[uuid.UUID, int] = {}
    rows = connection.execute(_BY_TENANT, {"tenants": list(tenants), "stale": stale, "except_replay": except_replay})
    for tenant_id, n in rows:
        if n:
            counted[tenant_id] = counted.get(tenant_id, 0) + int(n)
    return counted


# The advisory locks' key space: fair claims' own (a lock key is a signed 64-bit number).
_LOCK_NAMESPACE = 0x5C1A_1A5C


def lock_key(tenant_id: uuid.UUID) -> int:
    """A tenant's advisory lock key: 64 bits of its id (two tenants sharing one only wait for each other)."""
    key = (tenant_id.int >> 64) ^ _LOCK_NAMESPACE
    return key - (1 << 64) if key >= (1 << 63) else key


def lock(connection: Connection, tenants: list[uuid.UUID]) -> None:
    """Serialize the tenants' claims until this transaction ends, so that a recount made now sees
    every other claim of theirs that made it (PostgreSQL: a transaction-level advisory lock per
    tenant, always taken in one order, so two claims never wait for each other's second lock;
    SQLite: the claim's write lock already is). Take it after the claim's own UPDATE, and read
    only after it: a claim holding it never waits for a row."""
    if connection.dialect.name != "postgresql":
        return
    for tenant_id in sorted(tenants):
        connection.execute(select(func.pg_advisory_xact_lock(lock_key(tenant_id))))
