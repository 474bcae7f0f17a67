"""A 10,000-set batch of the sample loan workbook on `sheetcalc dev`: submit -> all done.

Starts the dev stack in a subprocess (SQLite, or with --db postgresql a scratch database made and
dropped as bench/throughput.py does; moto) and deploys examples/loan-quote.xlsx as
bench/throughput.py does (or, with --base-url and --api-key, uses a dev server already running
with the loan workbook active as tenant "bench", engine "loan"), then:
  1. POST /jobs/batch/bench/loan with N input sets (all valid, each a different principal);
  2. polls GET /jobs/batch/{id} every 0.2 s until done;
  3. reads the results as JSON lines and as a workbook, and checks every set completed.
Prints the time of each step and the load average before and after.
Usage: python bench/batch.py [--sets 10000] [--db sqlite|postgresql] [--base-url URL --api-key KEY]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from throughput import PG_ADMIN_URL, deploy, dev_stack, scratch_postgres  # noqa: E402


def run(base: str, key: dict, sets: int) -> None:
    http = httpx.Client(base_url=base, timeout=120)
    inputs = [{"principal": 100000 + i, "annual_rate": 0.045, "years": 30, "start_date": "2026-01-01"} for i in range(sets)]
    started = time.perf_counter()
    r = http.post("/jobs/batch/bench/loan", headers=key, json={"inputs": inputs})
    r.raise_for_status()
    accepted = time.perf_counter()
    batch_id = r.json()["batch_id"]
    while True:
        status = http.get(f"/jobs/batch/{batch_id}", headers=key).json()
        if status["done"]:
            break
        time.sleep(0.2)
    done = time.perf_counter()
    lines = http.get(f"/jobs/batch/{batch_id}/results", headers=key).text.splitlines()
    read_lines = time.perf_counter()
    book = http.get(f"/jobs/batch/{batch_id}/results", params={"format": "xlsx"}, headers=key)
    read_book = time.perf_counter()
    assert status["counts"]["completed"] == sets, status["counts"]
    assert len(lines) == sets and book.status_code == 200
    print(f"{sets:,} input sets of the loan workbook:")
    print(f"  POST (checked, inserted, queued) {accepted - started:6.2f} s")
    print(f"  submit -> all done                {done - started:6.2f} s  ({sets / (done - started):,.0f} jobs/s)")
    print(f"  results as JSON lines             {read_lines - done:6.2f} s")
    print(f"  results as a workbook             {read_book - read_lines:6.2f} s  ({len(book.content):,} bytes)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", type=int, default=10_000)
    parser.add_argument("--base-url")
    parser.add_argument("--api-key")
    parser.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--pg-admin-url", default=os.environ.get("SHEETCALC_BENCH_PG_ADMIN_URL", PG_ADMIN_URL))
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    if args.base_url:
        run(args.base_url, {"X-API-Key": args.api_key}, args.sets)
    elif args.db == "postgresql":
        with scratch_postgres(args.pg_admin_url) as url, tempfile.TemporaryDirectory() as tmp, dev_stack(Path(tmp), url) as stack:
            run(stack.base, deploy(stack), args.sets)
    else:
        with tempfile.TemporaryDirectory() as tmp, dev_stack(Path(tmp), None) as stack:
            run(stack.base, deploy(stack), args.sets)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
