"""The worker Lambda's handler, fed SQS batches of sample-workbook jobs: what a worker does per
invocation, to choose the jobs queue's batch size and the workers' reserved concurrency.

In this process: a moto server (ThreadedMotoServer, via the dev stack's start_local_aws) for S3
and SQS, a temporary SQLite database (or --database-url), the loan workbook deployed and, for
each batch size, --jobs jobs submitted through the execute service (so their messages are on the
jobs queue exactly as the API leaves them). Then, as Lambda's event source mapping does, it
receives up to batch-size messages, invokes `functions.worker.app.handler` with them as an
`aws:sqs` event and deletes what the handler did not report failed (shared/devstack/pollers.py,
the dev stack's own poller), until every job is finished. Only the handler's time is counted,
which is what Lambda bills; receiving and deleting are the event source mapping's. Its wall
time grows with the machine's load; the CPU time of this process while the handler runs (which
includes moto serving the handler's S3 and SQS calls) does much less.

It does not look inside the handler: however it processes a batch (one at a time, or a batch
of one version against one loaded model), the measure is jobs per invocation and time per job.
Every job must end completed, or the bench stops with an error.

On AWS the database is PostgreSQL over the network and S3 / SQS are remote services, so each
of the handler's round trips costs more than on loopback here: read the implied throughput as
an upper bound for one worker's CPU, not a promise.

Usage: python bench/worker_handler.py [--batch-sizes 1,5,10] [--jobs 100] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._report import header, machine  # noqa: E402
from bench.throughput import INPUTS, LOAN, summary  # noqa: E402

WORKERS = 100  # the throughput is also given for this many concurrent workers


def configure(database_url: str, data_dir: Path, aws) -> None:
    """Point this process at the database and the moto server as `sheetcalc dev` points its own
    (its secrets and settings, from shared.devstack.server), and migrate."""
    os.environ["DATABASE_URL"] = database_url
    from shared.db.migrate import upgrade
    from shared.devstack.server import _point_settings_at, load_dev_secrets

    load_dev_secrets(data_dir)
    _point_settings_at(aws, data_dir)
    upgrade()


def statuses(job_ids: list[str]) -> dict[str, int]:
    """How many of ``job_ids`` are in each status."""
    import uuid

    from sqlalchemy import func, select

    from shared.db.models import Job
    from shared.db.session import session_scope

    with session_scope() as session:
        rows = session.execute(
            select(Job.status, func.count()).where(Job.id.in_([uuid.UUID(j) for j in job_ids])).group_by(Job.status)
        ).all()
    return {str(getattr(status, "value", status)): count for status, count in rows}


class TimedHandler:
    """The worker handler, its wall time and batch size recorded for each invocation."""

    def __init__(self):
        from functions.worker.app import handler

        self.handler = handler
        self.invocations: list[tuple[int, float]] = []  # (records, milliseconds)
        self.cpu_ms = 0.0

    def __call__(self, event, context):
        t0, cpu0 = time.perf_counter(), time.process_time()
        try:
            return self.handler(event, context)
        finally:
            self.invocations.append((len(event["Records"]), (time.perf_counter() - t0) * 1000))
            self.cpu_ms += (time.process_time() - cpu0) * 1000


def run_batch_size(deployed, aws, batch_size: int, jobs: int) -> dict:
    """``jobs`` jobs queued, then handed to the handler ``batch_size`` messages at a time."""
    from shared.devstack.pollers import SqsPoller
    from tests.factories import submit_job

    ids = [submit_job(deployed, {**INPUTS, "principal": 100000 + i}) for i in range(jobs)]
    timed = TimedHandler()
    poller = SqsPoller(aws.jobs_queue_url, timed, function_name="sheetcalc-worker-bench",
                       endpoint_url=aws.endpoint_url, region=aws.region, batch_size=batch_size)
    empty_receives = 0
    while empty_receives < 3:
        messages = poller.receive(wait_time_seconds=0)
        if not messages:
            empty_receives += 1
            continue
        empty_receives = 0
        poller.deliver(messages)
    counts = statuses(ids)
    if counts.get("completed", 0) != jobs:
        raise SystemExit(f"batch size {batch_size}: not every job completed: {counts}")
    records = sum(n for n, _ in timed.invocations)
    handler_ms = sum(ms for _, ms in timed.invocations)
    per_job = handler_ms / records
    per_invocation = [ms for _, ms in timed.invocations]
    return {
        "batch_size": batch_size, "jobs": jobs, "invocations": len(timed.invocations),
        "jobs_per_invocation": records / len(timed.invocations),
        "invocation_ms": summary(per_invocation),
        "ms_per_job": per_job,
        "cpu_ms_per_job": timed.cpu_ms / records,
        "jobs_per_s_per_worker": 1000 / per_job,
        f"jobs_per_s_per_{WORKERS}_workers": WORKERS * 1000 / per_job,
        # Were each worker's time its CPU time alone (a vCPU of its own, no waiting for one):
        f"jobs_per_s_per_{WORKERS}_workers_by_cpu": WORKERS * 1000 * records / timed.cpu_ms,
    }


def measure(batch_sizes: list[int], jobs: int, database_url: str | None, warmup: int) -> dict:
    from shared.devstack.local_aws import start_local_aws

    with tempfile.TemporaryDirectory(prefix="sheetcalc-worker-bench-") as tmp:
        aws = start_local_aws()
        try:
            configure(database_url or f"sqlite:///{Path(tmp) / 'bench.db'}", Path(tmp), aws)
            from tests.factories import create_tenant, deploy_loan, sign_in

            deployed = deploy_loan(sign_in(None, create_tenant()), LOAN.read_bytes())
            run_batch_size(deployed, aws, 1, warmup)  # first-use costs: imports, clients, the model cache
            rows = [run_batch_size(deployed, aws, size, jobs) for size in batch_sizes]
        finally:
            from shared.db.session import reset_engines

            reset_engines()
            aws.stop()
    return {
        **machine(database_url),
        "rows": rows,
    }


def table(report: dict) -> str:
    lines = [
        header(report, "moto in-process"),
        "| batch size | invocations | jobs / invocation | invocation p50 / p95 ms | ms / job | CPU ms / job "
        f"| jobs/s, 1 worker | jobs/s, {WORKERS} workers (by wall / by CPU) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        inv = r["invocation_ms"]
        lines.append(
            f"| {r['batch_size']} | {r['invocations']} | {r['jobs_per_invocation']:.1f} | {inv['p50']:.1f} / {inv['p95']:.1f} "
            f"| {r['ms_per_job']:.1f} | {r['cpu_ms_per_job']:.1f} | {r['jobs_per_s_per_worker']:.1f} | {r[f'jobs_per_s_per_{WORKERS}_workers']:.0f} / {r[f'jobs_per_s_per_{WORKERS}_workers_by_cpu']:.0f} |"
        )
    return "\n".join(lines)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch-sizes", default="1,5,10", type=lambda s: [int(x) for x in s.split(",")])
    p.add_argument("--jobs", type=int, default=100, help="jobs per batch size (default 100)")
    p.add_argument("--warmup", type=int, default=5, help="jobs run first, not measured (default 5)")
    p.add_argument("--database-url", default=None, help="instead of a temporary SQLite database")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if any(not 1 <= b <= 10 for b in args.batch_sizes):
        p.error("an SQS batch is 1 to 10 messages")
    report = measure(args.batch_sizes, args.jobs, args.database_url, args.warmup)
    print(json.dumps(report, indent=2) if args.json else table(report))
    return report


if __name__ == "__main__":
    main()
