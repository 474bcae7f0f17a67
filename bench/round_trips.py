"""SQL statements and PostgreSQL round trips per job, step by step along a job's path: the API's
execute (auth, lookups, idempotency, insert, rollups, commit), the worker's batch (claim, finish,
rollups, completion NOTIFY) and the status reads (GET /jobs/{id}, with and without wait=).

In this process: a moto server for S3 and SQS, the database of --database-url (default a
temporary SQLite file), the loan workbook deployed, the API app over an in-process client, and
the worker's ``run_jobs`` called directly on the jobs the API queued. Counted with
``tests/statement_counter.py`` (SQLAlchemy's ``before_cursor_execute``; pg8000's waits for the
server). The counts are the same however busy the machine is.

Usage: python bench/round_trips.py [--database-url URL] [--batch 10] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.throughput import INPUTS, LOAN  # noqa: E402
from bench.worker_handler import configure  # noqa: E402
from tests.statement_counter import counting  # noqa: E402


def _row(step: str, seen, per: int = 1) -> dict:
    return {
        "step": step, "per": per, "statements": seen.statements, "round_trips": seen.round_trips, "prepares": seen.prepares,
        "commits": seen.commits, "kinds": dict(seen.by_kind()),
    }


def measure(database_url: str | None, batch: int) -> list[dict]:
    from fastapi.testclient import TestClient

    from shared.api.app import create_app
    from shared.devstack.local_aws import start_local_aws
    from shared.services.job_runner import run_jobs
    from tests.factories import create_tenant, deploy_loan, sign_in

    rows = []
    with tempfile.TemporaryDirectory(prefix="sheetcalc-round-trips-") as tmp:
        aws = start_local_aws()
        try:
            configure(database_url or f"sqlite:///{Path(tmp) / 'bench.db'}", Path(tmp), aws)
            deployed = deploy_loan(sign_in(None, create_tenant()), LOAN.read_bytes())
            headers = {"X-API-Key": deployed.api_key}
            with TestClient(create_app()) as client:

                def execute(i: int, **extra) -> str:
                    r = client.post(deployed.execute_path, json={"inputs": {**INPUTS, "principal": 100000 + i}}, **extra)
                    assert r.status_code in (200, 202), r.text
                    return r.json()["job_id"]

                run_jobs([uuid.UUID(execute(0, headers=headers))])  # first use: imports, caches, the consumer's touch
                with counting() as seen:
                    execute(1, headers=headers)
                rows.append(_row("API execute (202)", seen))
                with counting() as seen:
                    execute(2, headers={**headers, "Idempotency-Key": uuid.uuid4().hex})
                rows.append(_row("API execute with Idempotency-Key", seen))

                ids = [uuid.UUID(execute(10 + i, headers=headers)) for i in range(batch)]
                with counting() as seen:
                    run_jobs(ids)
                rows.append(_row(f"worker run_jobs, batch of {batch}", seen, per=batch))
                one = [uuid.UUID(execute(100, headers=headers))]
                with counting() as seen:
                    run_jobs(one)
                rows.append(_row("worker run_jobs, batch of 1", seen))

                with counting() as seen:
                    assert client.get(f"/jobs/{ids[0]}", headers=headers).json()["status"] == "completed"
                rows.append(_row("API GET /jobs/{id}", seen))
                with counting() as seen:
                    client.get(f"/jobs/{ids[0]}?wait=5", headers=headers)
                rows.append(_row("API GET /jobs/{id}?wait=5, already finished", seen))

                # Woken: the worker (another thread, not counted) finishes the job while the request waits.
                pending = uuid.UUID(execute(200, headers=headers))
                worker = threading.Thread(target=lambda: (time.sleep(0.5), run_jobs([pending])), name="bench-worker")
                with counting(exclude_threads=("bench-worker",)) as seen:
                    worker.start()
                    assert client.get(f"/jobs/{pending}?wait=20", headers=headers).json()["status"] == "completed"
                    worker.join()
                row = _row("API GET /jobs/{id}?wait=20, woken by the finish", seen)
                row["listener_round_trips"] = seen.listener_round_trips
                rows.append(row)
        finally:
            from shared.db.session import reset_engines

            reset_engines()
            aws.stop()
    return rows


def table(rows: list[dict], database: str) -> str:
    lines = [
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {database}",
        "| step | statements | per job | round trips (of them first prepares) | per job | commits | statements by kind |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(r["kinds"].items(), key=lambda kv: -kv[1]))
        lines.append(
            f"| {r['step']} | {r['statements']} | {r['statements'] / r['per']:.1f} | {r['round_trips']} ({r['prepares']}) "
            f"| {r['round_trips'] / r['per']:.1f} | {r['commits']} | {kinds} |"
        )
    return "\n".join(lines)


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--database-url", default=None, help="instead of a temporary SQLite database")
    p.add_argument("--batch", type=int, default=10, help="jobs in the worker's batch (default 10)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    rows = measure(args.database_url, args.batch)
    print(json.dumps(rows, indent=2) if args.json else table(rows, args.database_url.split(":", 1)[0] if args.database_url else "sqlite"))
    return rows


if __name__ == "__main__":
    main()
