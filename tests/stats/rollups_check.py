"""What the daily rollups must hold, worked out in Python from a tenant's jobs, and what they hold."""

from __future__ import annotations

import uuid

from sqlalchemy import select

from shared.db.models import Base, Job
from shared.db.session import session_scope

# table: (key columns after tenant_id and day, name columns, consumers' jobs only)
ROLLUPS = {
    "job_stats_daily": (("engine_id", "version_id", "is_test"), ("engine_name", "engine_slug", "version"), False),
    "job_consumer_stats_daily": (("consumer_id",), ("consumer_name",), True),
    "job_consumer_engine_stats_daily": (("consumer_id", "engine_id"), ("consumer_name", "engine_name", "engine_slug"), True),
}
HISTOGRAMS = {"job_time_histogram_daily": (), "job_engine_time_histogram_daily": ("engine_id",)}


def expected(session, tenant_id: uuid.UUID) -> dict[str, dict]:
    """Each rollup table's rows for the tenant, computed job by job (fine for a test's few jobs)."""
    jobs = session.scalars(select(Job).where(Job.tenant_id == tenant_id).order_by(Job.created_at)).all()
    out: dict[str, dict] = {}
    for table, (keys, names, consumers_only) in ROLLUPS.items():
        rows: dict = {}
        for j in jobs:
            if consumers_only and j.consumer_id is None:
                continue
            row = rows.setdefault(
                (j.created_at.date(), *(getattr(j, k) for k in keys)),
                dict(total_calls=0, completed_calls=0, failed_calls=0, timed_calls=0, time_sum_ms=0),
            )
            row["total_calls"] += 1
            row["completed_calls"] += j.status == "completed"
            row["failed_calls"] += j.status == "failed"
            row["timed_calls"] += j.execution_time_ms is not None
            row["time_sum_ms"] += j.execution_time_ms or 0
            row.update({n: getattr(j, n) for n in names}, last_created_at=j.created_at)  # jobs in creation order
        out[table] = rows
    for table, keys in HISTOGRAMS.items():
        counts: dict = {}
        for j in jobs:
            if j.execution_time_ms is not None:
                key = (j.created_at.date(), *(getattr(j, k) for k in keys), j.execution_time_ms)
                counts[key] = counts.get(key, 0) + 1
        out[table] = {k: {"count": c} for k, c in counts.items()}
    return out


def actual(session, tenant_id: uuid.UUID) -> dict[str, dict]:
    """Each rollup table's rows for the tenant, as stored."""
    out: dict[str, dict] = {}
    for table_name, keys in [*((t, k) for t, (k, _, _) in ROLLUPS.items()), *((t, (*k, "execution_time_ms")) for t, k in HISTOGRAMS.items())]:
        table = Base.metadata.tables[table_name]
        rows = {}
        for r in session.execute(select(table).where(table.c.tenant_id == tenant_id)).mappings():
            rest = {c: v for c, v in r.items() if c not in ("tenant_id", "day", *keys)}
            rows[(r["day"], *(r[k] for k in keys))] = rest
        out[table_name] = rows
    return out


def assert_rollups_exact(tenant_id) -> dict[str, dict]:
    """The rollups hold exactly what the tenant's jobs add up to; returns them."""
    with session_scope() as s:
        tid = uuid.UUID(str(tenant_id))
        want, got = expected(s, tid), actual(s, tid)
    assert got == want
    return got
