"""Statistics at scale: 1,000,000 jobs in PostgreSQL, each stats call timed.

Creates a scratch database (scripts/pgdb.py), migrates it to 0003, makes one tenant with 50 engines
(two versions each, one of them active; the last two engines deleted) and 200 consumers (ten
archived), then loads the jobs with COPY: spread evenly over the year before --until, 95 %
completed, 4 % failed (no execution time), 1 % pending or processing, 1 % from test keys,
execution times 2..2000 ms skewed low. A second tenant gets 1 % as many jobs, so every query
has another tenant's rows to skip. Then it migrates to --revision, so migration 0004 fills the
daily rollups from those jobs (INSERT ... SELECT ... GROUP BY, as on a real upgrade), and times the service functions behind
GET /tenant/stats, /engines/{id}/stats and /consumers/{id}/stats, without a date range, over
the last 30 days, over one day and over 30 days that start and end mid-day, and prints the median and worst of --repeat calls after
one warm-up call.

Usage: python bench/stats_bench.py [--jobs 1000000] [--revision head] [--keep] [--reuse]
  --revision 0002|0003  stop before the indexes of 0003 or the rollups of 0004 (the statistics
                        code of this revision needs 0004: time older revisions from their commits)
  --keep / --reuse keep the database afterwards / time an existing one without reloading
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import statistics
import subprocess
import sys
import time
import uuid
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

ENGINES, CONSUMERS = 50, 200
COLUMNS = (
    "id, tenant_id, engine_id, engine_name, engine_slug, version_id, version, consumer_id, consumer_name, "
    "is_test, status, inputs, outputs, error_message, execution_time_ms, created_at, updated_at, started_at, completed_at"
)
INPUTS = json.dumps({"principal": 250000, "annual_rate": 0.045, "years": 30, "start_date": "2026-01-01"})
OUTPUTS = json.dumps({"monthly_payment": 1266.7132745647, "total_paid": 456016.778843, "total_interest": 206016.778843})


def pgdb(action: str, admin_url: str, name: str) -> None:
    subprocess.run([sys.executable, str(REPO / "scripts" / "pgdb.py"), action, admin_url, name], check=True)


def setup_tenant(session, slug: str, *, engines: int, consumers: int):
    """A tenant with engines (two versions each, the second active) and consumers; rows for the jobs."""
    from shared.db.models import Consumer, Engine, EngineVersion, Tenant

    tenant = Tenant(slug=slug, name=slug)
    session.add(tenant)
    session.flush()
    engine_rows = []
    for i in range(engines):
        engine = Engine(tenant_id=tenant.id, name=f"Engine {i}", slug=f"engine-{i}", ip_whitelist=[])
        session.add(engine)
        session.flush()
        versions = []
        for v in ("1.0", "2.0"):
            row = EngineVersion(
                tenant_id=tenant.id, engine_id=engine.id, version=v, filename="w.xlsx", file_size=1,
                workbook_key=f"k/{uuid.uuid4()}", named_ranges=[], test_key_hash=uuid.uuid4().hex,
            )
            session.add(row)
            versions.append(row)
        session.flush()
        engine.active_version_id = versions[1].id
        engine_rows.append((engine.id, engine.name, engine.slug, [(v.id, v.version) for v in versions]))
    consumer_rows = []
    for i in range(consumers):
        consumer = Consumer(
            tenant_id=tenant.id, name=f"Consumer {i}", api_key_hash=uuid.uuid4().hex, api_key_hint="x",
            is_archived=i < consumers // 20,
        )
        session.add(consumer)
        consumer_rows.append(consumer)
    session.flush()
    return tenant.id, engine_rows, [(c.id, c.name) for c in consumer_rows]


def csv_field(value) -> str:
    if value is None:
        return ""
    text = str(value)
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\n') else text


def job_lines(rng: random.Random, n: int, tenant_id, engines, consumers, start: datetime, span_s: float):
    """n jobs in creation order, as CSV lines for COPY."""
    step = span_s / n
    for i in range(n):
        created = start + timedelta(seconds=i * step + rng.random() * step)
        engine_id, engine_name, engine_slug, versions = engines[min(int(rng.paretovariate(1.2)) - 1, len(engines) - 1)] if rng.random() < 0.3 else rng.choice(engines)
        version_id, version = versions[1] if rng.random() < 0.8 else versions[0]
        test = rng.random() < 0.01
        consumer_id, consumer_name = (None, None) if test else rng.choice(consumers)
        roll = rng.random()
        status = "completed" if roll < 0.95 else "failed" if roll < 0.99 else "pending" if roll < 0.995 else "processing"
        ms = min(2000, int(rng.lognormvariate(3.5, 0.9)) + 2) if status == "completed" else None
        done = created + timedelta(milliseconds=(ms or 0) + 5)
        yield ",".join(
            csv_field(v)
            for v in (
                uuid.uuid4(), tenant_id, engine_id, engine_name, engine_slug, version_id, version, consumer_id,
                consumer_name, "t" if test else "f", status, INPUTS, OUTPUTS if status == "completed" else None,
                "Calculation failed" if status == "failed" else None, ms, created.replace(tzinfo=None),
                done.replace(tzinfo=None), created.replace(tzinfo=None) if status != "pending" else None,
                done.replace(tzinfo=None) if status in ("completed", "failed") else None,
            )
        ) + "\n"


def copy_jobs(url: str, lines, batch: int = 100_000) -> None:
    import pg8000.native
    import urllib.parse

    u = urllib.parse.urlparse(url.replace("postgresql+pg8000://", "postgresql://"))
    con = pg8000.native.Connection(user=u.username or "postgres", password=u.password, host=u.hostname, port=u.port or 5432, database=u.path.lstrip("/"))
    buffer: list[str] = []
    for line in lines:
        buffer.append(line)
        if len(buffer) >= batch:
            con.run(f"COPY jobs ({COLUMNS}) FROM STDIN WITH (FORMAT csv)", stream=io.StringIO("".join(buffer)))
            buffer.clear()
    if buffer:
        con.run(f"COPY jobs ({COLUMNS}) FROM STDIN WITH (FORMAT csv)", stream=io.StringIO("".join(buffer)))
    con.run("VACUUM ANALYZE jobs")
    con.close()


def vacuum_analyze(url: str) -> None:
    import pg8000.native
    import urllib.parse

    u = urllib.parse.urlparse(url.replace("postgresql+pg8000://", "postgresql://"))
    con = pg8000.native.Connection(user=u.username or "postgres", password=u.password, host=u.hostname, port=u.port or 5432, database=u.path.lstrip("/"))
    con.run("VACUUM ANALYZE")
    con.close()


def load(url: str, jobs: int, until: datetime) -> None:
    from sqlalchemy import delete

    from shared.db.models import Engine
    from shared.db.session import session_scope

    rng = random.Random(20260101)
    start, span = until - timedelta(days=365), 365 * 86400.0
    with session_scope() as s:
        tenant_id, engines, consumers = setup_tenant(s, "bench", engines=ENGINES, consumers=CONSUMERS)
        other_id, other_engines, other_consumers = setup_tenant(s, "other", engines=5, consumers=10)
    began = time.perf_counter()
    copy_jobs(url, job_lines(rng, jobs, tenant_id, engines, consumers, start, span))
    copy_jobs(url, job_lines(rng, max(1, jobs // 100), other_id, other_engines, other_consumers, start, span))
    with session_scope() as s:  # two engines deleted: their jobs stay
        s.execute(delete(Engine).where(Engine.id.in_([e[0] for e in engines[-2:]])))
    print(f"loaded {jobs:,} + {max(1, jobs // 100):,} jobs in {time.perf_counter() - began:.1f} s")


def timed(fn, repeat: int) -> tuple[float, float]:
    fn()  # warm-up: plans, caches
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        fn()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times), max(times)


def measure(until: datetime, repeat: int) -> None:
    from sqlalchemy import func, select

    from shared.db.models import Consumer, Engine, Job, Tenant
    from shared.db.session import new_session
    from shared.services import stats

    session = new_session()
    tenant_id = session.scalar(select(Tenant.id).where(Tenant.slug == "bench"))
    busiest_engine = session.scalar(
        select(Job.engine_id).join(Engine, Engine.id == Job.engine_id).where(Job.tenant_id == tenant_id)
        .group_by(Job.engine_id).order_by(func.count().desc()).limit(1)
    )
    typical_engine = session.scalar(select(Engine.id).where(Engine.tenant_id == tenant_id, Engine.name == "Engine 25"))
    consumer = session.scalar(select(Consumer.id).where(Consumer.tenant_id == tenant_id, Consumer.name == "Consumer 100"))
    engine_jobs = {e: session.scalar(select(func.count()).where(Job.engine_id == e)) for e in (busiest_engine, typical_engine)}
    consumer_jobs = session.scalar(select(func.count()).where(Job.consumer_id == consumer))
    total = session.scalar(select(func.count()).where(Job.tenant_id == tenant_id))
    session.close()

    day = until.date() - timedelta(days=1)
    ranges_start = datetime.combine(until.date() - timedelta(days=30), datetime.min.time(), timezone.utc)
    ranges = {
        "no range (whole year)": (None, None),
        "last 30 days": (ranges_start, None),
        "one day": (datetime.combine(day, datetime.min.time(), timezone.utc),
                    datetime.combine(day, datetime.max.time(), timezone.utc)),
        # partial first and last days: those two days are read from the jobs, the rest from rollups
        "30 days, 08:00 to 17:30": (ranges_start + timedelta(hours=8), datetime.combine(day, datetime.min.time(), timezone.utc) + timedelta(hours=17.5)),
    }
    calls = {
        f"tenant stats ({total:,} jobs)": lambda s, a, b: stats.for_tenant(s, tenant_id=tenant_id, start=a, end=b),
        f"engine stats, busiest engine ({engine_jobs[busiest_engine]:,} jobs)":
            lambda s, a, b: stats.for_engine(s, tenant_id=tenant_id, engine_id=busiest_engine, start=a, end=b),
        f"engine stats, typical engine ({engine_jobs[typical_engine]:,} jobs)":
            lambda s, a, b: stats.for_engine(s, tenant_id=tenant_id, engine_id=typical_engine, start=a, end=b),
        f"consumer stats ({consumer_jobs:,} jobs)":
            lambda s, a, b: stats.for_consumer(s, tenant_id=tenant_id, consumer_id=consumer, start=a, end=b),
    }
    print(f"\n| call | range | median ms | worst ms (of {repeat}) |\n|---|---|---|---|")
    for name, call in calls.items():
        for label, (a, b) in ranges.items():
            def once():
                with new_session() as s:
                    call(s, a, b)
            median, worst = timed(once, repeat)
            print(f"| {name} | {label} | {median:.0f} | {worst:.0f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--admin-url", default=os.environ.get("SHEETCALC_PG_ADMIN", "postgresql://postgres@127.0.0.1:5432/test"))
    parser.add_argument("--db", default="sc_stats_bench")
    parser.add_argument("--revision", default="head")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--until", default="2026-07-01", help="the data ends the day before (UTC)")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--reuse", action="store_true")
    args = parser.parse_args()

    base = args.admin_url.rsplit("/", 1)[0]
    url = f"{base.replace('postgresql://', 'postgresql+pg8000://')}/{args.db}"
    os.environ.update(DATABASE_URL=url, SHEETCALC_ENV="dev", SHEETCALC_DATA_DIR=os.environ.get("SHEETCALC_DATA_DIR", "/tmp/sc-stats-bench"))
    from shared.config import reset_settings
    from shared.db.migrate import upgrade
    from shared.db.session import reset_engines

    reset_settings()
    until = datetime.combine(date.fromisoformat(args.until), datetime.min.time(), timezone.utc)
    if not args.reuse:
        pgdb("drop", args.admin_url, args.db)
        pgdb("create", args.admin_url, args.db)
        before_rollups = "0003" if args.revision in ("head", "0004") else args.revision
        upgrade(url, before_rollups)
        load(url, args.jobs, until)
        if before_rollups != args.revision:
            began = time.perf_counter()
            upgrade(url, args.revision)
            vacuum_analyze(url)
            print(f"migrated to {args.revision} (rollups backfilled from the jobs) in {time.perf_counter() - began:.1f} s")
    try:
        measure(until, args.repeat)
    finally:
        reset_engines()
        if not args.keep:
            pgdb("drop", args.admin_url, args.db)


if __name__ == "__main__":
    main()
