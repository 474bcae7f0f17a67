"""Two builds of the service measured alternately: `bench/throughput.py` on a base revision and on
this checkout, one after the other, `--pairs` times, and each level's figures side by side.

On this machine the same build gives jobs/s and CPU per job that differ by a third between
hours (the host's speed changes: see the README's Benchmarks), so a change is claimed only when
alternating runs show it. The base revision is checked out as a detached git worktree in a
temporary folder (removed at the end) and run with this interpreter: `bench/throughput.py` starts
`sheetcalc dev` with the working directory of its own checkout, so each run serves that
checkout's code. The local AWS, PostgreSQL scratch databases and clients are the bench's own.

    .venv/bin/python bench/alternate.py --base 8646c5c --pairs 3 -- --one-call --db sqlite --concurrency 16 --duration 10
    .venv/bin/python bench/alternate.py --base HEAD~1 --json -- --db postgresql --concurrency 16

Everything after `--` goes to `bench/throughput.py` (its `--json` is added here). Prints, per
level, each run's jobs/s, CPU ms per job, client p50 / p95 ms and errors, base run first in each
pair, then per build the median jobs/s and CPU per job.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILDS = ("base", "this")


@contextmanager
def worktree(revision: str):
    """``revision`` checked out, detached, in a temporary folder; removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="sheetcalc-alternate-") as tmp:
        path = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "--force", str(path), revision],
                       check=True, capture_output=True, text=True)
        try:
            yield path
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(path)], capture_output=True)
            subprocess.run(["git", "-C", str(REPO), "worktree", "prune"], capture_output=True)


def run_throughput(checkout: Path, bench_args: list[str]) -> dict:
    """One `bench/throughput.py --json` run of ``checkout``'s service; its report."""
    done = subprocess.run([sys.executable, "bench/throughput.py", *bench_args, "--json"], cwd=checkout,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench/throughput.py in {checkout} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def levels(report: dict) -> list[dict]:
    return [level for run in report["runs"] for level in run["levels"]]


def rows(results: list[tuple[int, str, str, dict]]) -> list[dict]:
    """One row per level of each run: pair, build, when, db, clients and the figures compared."""
    out = []
    for pair, build, started, report in results:
        for level in levels(report):
            client = level["client_ms"]
            out.append({
                "pair": pair, "build": build, "started": started, "db": level["db"], "clients": level["concurrency"],
                "jobs_per_s": level["jobs_per_s"], "cpu_ms_per_job": level["cpu_ms_per_job"],
                "client_p50_ms": client["p50"], "client_p95_ms": client["p95"], "errors": level["errors"],
            })
    return out


def medians(table_rows: list[dict]) -> list[dict]:
    """Per db, clients and build: the median jobs/s and CPU per job over the pairs."""
    groups: dict[tuple, list[dict]] = {}
    for row in table_rows:
        groups.setdefault((row["db"], row["clients"], row["build"]), []).append(row)
    return [
        {"db": db, "clients": clients, "build": build, "runs": len(group),
         "jobs_per_s": statistics.median(r["jobs_per_s"] for r in group),
         "cpu_ms_per_job": statistics.median(r["cpu_ms_per_job"] for r in group)}
        for (db, clients, build), group in sorted(groups.items(), key=lambda item: (item[0][0], item[0][1], BUILDS.index(item[0][2])))
    ]


def _f(value) -> str:
    return "-" if value is None else f"{value:.1f}"


def table(table_rows: list[dict], summary: list[dict], base: str) -> str:
    lines = [f"base = {base}, this = {REPO}",
             "| pair | build | started (UTC) | db | clients | jobs/s | CPU ms/job | client p50 / p95 ms | errors |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in table_rows:
        errors = sum(r["errors"].values())
        lines.append(f"| {r['pair']} | {r['build']} | {r['started']} | {r['db']} | {r['clients']} | {_f(r['jobs_per_s'])} "
                     f"| {_f(r['cpu_ms_per_job'])} | {_f(r['client_p50_ms'])} / {_f(r['client_p95_ms'])} | {errors} |")
    lines += ["", "| db | clients | build | runs | median jobs/s | median CPU ms/job |", "|---|---|---|---|---|---|"]
    lines += [f"| {m['db']} | {m['clients']} | {m['build']} | {m['runs']} | {_f(m['jobs_per_s'])} | {_f(m['cpu_ms_per_job'])} |"
              for m in summary]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    argv = list(sys.argv[1:] if argv is None else argv)
    bench_args = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", required=True, help="the revision to compare this checkout with (e.g. HEAD~1, a commit)")
    p.add_argument("--pairs", type=int, default=3, help="base-then-this runs (default 3)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(own)
    if args.pairs < 1:
        p.error("--pairs must be at least 1")
    results = []
    with worktree(args.base) as base_checkout:
        base_path = str(base_checkout)
        for pair in range(1, args.pairs + 1):
            for build, checkout in zip(BUILDS, (base_checkout, REPO)):
                started = time.strftime("%H:%M", time.gmtime())
                results.append((pair, build, started, run_throughput(checkout, bench_args)))
                print(f"pair {pair} {build} done", file=sys.stderr, flush=True)
    table_rows = rows(results)
    report = {"base": args.base, "base_checkout": base_path, "bench_args": bench_args, "rows": table_rows,
              "medians": medians(table_rows)}
    print(json.dumps(report, indent=2) if args.json else table(table_rows, report["medians"], args.base))
    return report


if __name__ == "__main__":
    main()
