"""The API alone, per request, in one process: CPU time of `POST /jobs/execute/...` and of
`GET /jobs/{id}` (pending and completed) through the ASGI app, no HTTP server, no client library.

Set-up as bench/worker_handler.py: a moto server (S3 and SQS) in this process, a temporary SQLite
database (or --database-url), the sample workbook (examples/loan-quote.xlsx) deployed through
the factories of the tests. Then, one request at a time, it calls the FastAPI app exactly as
uvicorn would (an ASGI scope, a receive that hands over the body, a send that collects the
answer) and counts this process's CPU time (every thread: the event loop and the worker thread
the service call hops to) and wall time per request.

The queue send of an execute goes, by default, to a stub that accepts and counts every message
(`--queue stub`): otherwise moto's SQS, serving SendMessageBatch in this same process, would be
counted as the API's CPU. `--queue moto` sends for real (still counted here).

For GET on completed jobs, the jobs made by the execute run are computed first by the worker's
own code (`job_runner.run_jobs`, outside the measurement).

Besides time, it counts what load does not move: SQL statements per request and, with
`--count-calls` (which slows the run), Python function calls per request in every thread.

Usage: python bench/api_request.py [--requests 500] [--warmup 50] [--queue stub|moto]
                                   [--database-url URL] [--profile FILE.prof] [--count-calls] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._report import header, machine  # noqa: E402
from bench.throughput import INPUTS, LOAN, summary  # noqa: E402
from bench.worker_handler import configure  # noqa: E402


class StubSender:
    """Stands in for the process's SQS batch sender: accepts every message and counts it."""

    def __init__(self) -> None:
        self.sent = 0

    def send(self, queue_url: str, body: str, **_message_options) -> bool:  # group, delay_seconds
        self.sent += 1
        return True


async def call(app, method: str, path: str, *, headers: dict[str, str], body: bytes = b"", query: bytes = b"") -> tuple[int, bytes]:
    """One request through the ASGI app as uvicorn hands it over; (status, body)."""
    raw_headers = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    if body:
        raw_headers.append((b"content-length", str(len(body)).encode()))
    scope = {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
        "method": method, "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query,
        "root_path": "", "headers": raw_headers, "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8080),
        "state": {},
    }
    sent_body = False
    status = 0
    chunks: list[bytes] = []

    async def receive():
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client never disconnects

    async def send(message):
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, b"".join(chunks)


class StatementCounter:
    """Counts the SQL statements sent to the database (a figure that does not depend on load)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, *_args, **_kwargs) -> None:
        self.count += 1

    def install(self) -> None:
        from sqlalchemy import event

        from shared.db.session import get_engine

        event.listen(get_engine(), "before_cursor_execute", self)


STATEMENTS = StatementCounter()


class CallCounter:
    """Counts Python function calls in every thread (``--count-calls``): like the statements, a
    figure that load does not move, to compare two versions on a busy machine. It is installed
    before any thread starts (so the request threads carry it) and counts only while enabled."""

    def __init__(self) -> None:
        self.count = 0
        self.active = False
        threading.setprofile(self)
        sys.setprofile(self)

    def __call__(self, _frame, event, _arg) -> None:
        if self.active and event == "call":
            self.count += 1

    def enable(self) -> None:
        self.active = True

    def disable(self) -> None:
        self.active = False


CALLS: CallCounter | None = None


async def timed(requests: list, app, expect: int, profiler: cProfile.Profile | None = None, *, measured: bool = True) -> dict:
    """Each request in turn; CPU and wall microseconds and SQL statements per request."""
    cpu_us: list[float] = []
    wall_us: list[float] = []
    answers: list[bytes] = []
    if profiler:
        profiler.enable()
    statements_start = STATEMENTS.count
    calls_start = CALLS.count if CALLS else 0
    if CALLS and measured:
        CALLS.enable()
    cpu_start, wall_start = time.process_time(), time.perf_counter()
    for method, path, headers, body in requests:
        c0, w0 = time.process_time(), time.perf_counter()
        status, answer = await call(app, method, path, headers=headers, body=body)
        cpu_us.append((time.process_time() - c0) * 1e6)
        wall_us.append((time.perf_counter() - w0) * 1e6)
        if status != expect:
            raise SystemExit(f"{method} {path}: {status} (expected {expect}): {answer[:300]!r}")
        answers.append(answer)
    cpu_total, wall_total = time.process_time() - cpu_start, time.perf_counter() - wall_start
    if CALLS and measured:
        CALLS.disable()
    if profiler and measured:
        profiler.disable()
    n = len(requests)
    return {
        "requests": n, "cpu_us_per_request": cpu_total * 1e6 / n, "wall_us_per_request": wall_total * 1e6 / n,
        "cpu_us": summary(cpu_us), "wall_us": summary(wall_us), "statements_per_request": (STATEMENTS.count - statements_start) / n,
        "python_calls_per_request": (CALLS.count - calls_start) / n if CALLS else None,
        "answers": answers,
    }


async def run(app, deployed, *, requests: int, warmup: int, profiler) -> dict:
    from shared.services import job_runner

    key = {"X-API-Key": deployed.api_key, "Content-Type": "application/json"}
    execute = [("POST", deployed.execute_path, key, json.dumps({"inputs": {**INPUTS, "principal": 100000 + i}}).encode())
               for i in range(warmup + requests)]
    await timed(execute[:warmup], app, 202, measured=False)
    rows = {"execute": await timed(execute[warmup:], app, 202, profiler)}
    ids = [json.loads(a)["job_id"] for a in rows["execute"].pop("answers")]
    gets = [("GET", f"/jobs/{i}", key, b"") for i in ids]
    await timed(gets[:warmup], app, 200, measured=False)
    rows["get_pending"] = await timed(gets, app, 200, profiler)
    rows["get_pending"].pop("answers")
    import uuid
    for start in range(0, len(ids), 10):  # as the worker would: batches of ten
        job_runner.run_jobs([uuid.UUID(i) for i in ids[start:start + 10]])
    rows["get_completed"] = await timed(gets, app, 200, profiler)
    if any(json.loads(a)["status"] != "completed" for a in rows["get_completed"].pop("answers")):
        raise SystemExit("not every job completed")
    return rows


def measure(requests: int, warmup: int, database_url: str | None, queue: str, profile: str | None, count_calls: bool = False) -> dict:
    global CALLS
    CALLS = CallCounter() if count_calls else None
    from shared.devstack.local_aws import start_local_aws

    with tempfile.TemporaryDirectory(prefix="sheetcalc-api-bench-") as tmp:
        aws = start_local_aws()
        stub = StubSender()
        try:
            configure(database_url or f"sqlite:///{Path(tmp) / 'bench.db'}", Path(tmp), aws)
            from shared.adapters import queues
            from shared.api.app import create_app
            from tests.factories import create_tenant, deploy_loan, sign_in

            deployed = deploy_loan(sign_in(None, create_tenant()), LOAN.read_bytes())
            STATEMENTS.install()
            if queue == "stub":
                queues._batch_sender = lambda: stub
            profiler = cProfile.Profile() if profile else None
            try:
                loop_factory = None
                try:
                    import uvloop  # what uvicorn runs on in `sheetcalc dev`

                    loop_factory = uvloop.new_event_loop
                except ImportError:
                    pass
                with asyncio.Runner(loop_factory=loop_factory) as runner:
                    rows = runner.run(run(create_app(), deployed, requests=requests, warmup=warmup, profiler=profiler))
            finally:
                if profiler:
                    profiler.dump_stats(profile)
        finally:
            from shared.db.session import reset_engines

            reset_engines()
            aws.stop()
    return {
        **machine(database_url),
        "queue": queue, "messages_to_stub": stub.sent if queue == "stub" else None,
        "rows": rows,
    }


def table(report: dict) -> str:
    lines = [
        header(report, f"queue: {report['queue']}"),
        "| request | requests | CPU µs / request | CPU p50 / p95 µs | wall µs / request | wall p50 / p95 µs | SQL statements / request "
        "| Python calls / request |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in report["rows"].items():
        lines.append(
            f"| {name} | {r['requests']} | {r['cpu_us_per_request']:.0f} | {r['cpu_us']['p50']:.0f} / {r['cpu_us']['p95']:.0f} "
            f"| {r['wall_us_per_request']:.0f} | {r['wall_us']['p50']:.0f} / {r['wall_us']['p95']:.0f} | {r['statements_per_request']:.1f} "
            f"| {'-' if r['python_calls_per_request'] is None else format(r['python_calls_per_request'], '.0f')} |"
        )
    return "\n".join(lines)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=500, help="measured requests of each kind (default 500)")
    p.add_argument("--warmup", type=int, default=50, help="requests of each kind run first, not measured (default 50)")
    p.add_argument("--queue", choices=("stub", "moto"), default="stub", help="where execute's message goes (default stub)")
    p.add_argument("--database-url", default=None, help="instead of a temporary SQLite database")
    p.add_argument("--profile", default=None, help="write a cProfile of the measured requests to this file")
    p.add_argument("--count-calls", action="store_true", help="also count Python function calls per request (slower)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    report = measure(args.requests, args.warmup, args.database_url, args.queue, args.profile, args.count_calls)
    print(json.dumps(report, indent=2) if args.json else table(report))
    return report


if __name__ == "__main__":
    main()
