"""A shadow replay of 10,000 recorded jobs of the sample workbook, end to end on the worker path.

In this process, as bench/worker_handler.py sets it up: a moto server (the dev stack's
start_local_aws) for S3 and SQS, a temporary SQLite database (or --database-url), the loan
workbook deployed as version 1.0 and uploaded again as 2.0. It seeds --jobs completed production
jobs of 1.0 straight into the jobs table (200 distinct loans, their outputs calculated once by
the fenced children), then times a replay of them on 2.0: asked for through the service (the
jobs chosen, the row written, the message queued), its message received from the jobs queue and
handed to `functions.worker.app.handler` by the dev stack's own poller (shared/devstack/pollers.py)
until the replay is completed. The report must say every case identical (the same workbook), or
the bench stops with an error.

Usage: python bench/replay.py [--jobs 10000] [--database-url URL]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.throughput import LOAN  # noqa: E402
from bench.worker_handler import configure  # noqa: E402

DISTINCT = 200


def seed(deployed, jobs: int) -> None:
    """``jobs`` completed production jobs of the deployed version, inserted in bulk."""
    from shared.db.models import Job, JobStatus
    from shared.db.session import session_scope
    from shared.db.types import utcnow
    from shared.repositories import engines as engine_repo
    from shared.repositories.jobs import JOBS
    from shared.services import job_runner

    now = utcnow()
    loans = [{"principal": 10_000 + 500 * i, "annual_rate": 0.01 + 0.0002 * i, "years": 5 + i % 26} for i in range(DISTINCT)]
    with session_scope() as session:
        version = engine_repo.get_version_to_calculate(session, version_id=uuid.UUID(deployed.version_id))
        probes = [Job(id=uuid.uuid4(), inputs=loan, created_at=now) for loan in loans]
        outputs = [job_runner._calculate(j, version, r) for j, r in zip(probes, job_runner.calculate_jobs(version, probes))]
        common = dict(tenant_id=uuid.UUID(deployed.admin.tenant_id), engine_id=uuid.UUID(deployed.engine_id), engine_name="Loan quote",
                      engine_slug=deployed.engine_slug, version_id=version.id, version="1.0", consumer_id=uuid.UUID(deployed.consumer_id),
                      consumer_name="Pricing app", is_test=False, status=JobStatus.COMPLETED, calc_engine=version.calc_engine,
                      execution_time_ms=1)
        rows = []
        for i in range(jobs):
            at = now - timedelta(seconds=jobs - i)
            rows.append(dict(common, id=uuid.uuid4(), inputs=loans[i % DISTINCT], outputs=outputs[i % DISTINCT],
                             created_at=at, updated_at=at, started_at=at, completed_at=at))
        for first in range(0, jobs, 1000):
            session.execute(JOBS.insert(), rows[first:first + 1000])


def measure(jobs: int, database_url: str | None) -> float:
    from shared.devstack.local_aws import start_local_aws

    with tempfile.TemporaryDirectory(prefix="sheetcalc-replay-bench-") as tmp:
        aws = start_local_aws()
        try:
            configure(database_url or f"sqlite:///{Path(tmp) / 'bench.db'}", Path(tmp), aws)
            from functions.worker.app import handler
            from shared.db.models import Replay
            from shared.db.session import session_scope
            from shared.devstack.pollers import SqsPoller
            from shared.services import replays
            from tests.factories import create_tenant, deploy_loan, sign_in
            from tests.replays.helpers import upload

            deployed = deploy_loan(sign_in(None, create_tenant()), LOAN.read_bytes())
            candidate = upload(deployed, LOAN.read_bytes(), "2.0")
            seed(deployed, jobs)
            poller = SqsPoller(aws.jobs_queue_url, handler, function_name="sheetcalc-replay-bench",
                               endpoint_url=aws.endpoint_url, region=aws.region, batch_size=10)
            started = time.perf_counter()
            with session_scope() as session:
                replay_id = replays.create(session, tenant_id=uuid.UUID(deployed.admin.tenant_id), engine_id=uuid.UUID(deployed.engine_id),
                                           version_id=uuid.UUID(candidate), count=jobs).id
            while True:
                messages = poller.receive(wait_time_seconds=1)
                if messages:
                    poller.deliver(messages)
                with session_scope() as session:
                    replay = session.get(Replay, replay_id)
                    if replay.status in ("completed", "failed"):
                        report, status = replay.report, replay.status
                        break
            elapsed = time.perf_counter() - started
            if status != "completed" or report["identical"] != jobs:
                raise SystemExit(f"the replay did not find every case identical: {status} {report and {k: report[k] for k in ('identical', 'changed', 'failed')}}")
        finally:
            from shared.db.session import reset_engines

            reset_engines()
            aws.stop()
    return elapsed


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--database-url")
    args = parser.parse_args(argv)
    elapsed = measure(args.jobs, args.database_url)
    print(f"replay of {args.jobs:,} recorded jobs: {elapsed:.1f} s end to end ({args.jobs / elapsed:,.0f} jobs/s)")


if __name__ == "__main__":
    main()
