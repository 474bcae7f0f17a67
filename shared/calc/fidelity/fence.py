"""The subprocess fence: the fidelity check in a child process with a deadline and an
address-space limit, so an engine that takes minutes or gigabytes cannot take the caller down."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from shared.calc.fidelity.check import check
from shared.calc.fidelity.report import FidelityReport
from shared.calc.xlsx.package import UNREADABLE
from shared.config import get_settings
from shared.errors import WorkbookError


def check_isolated(
    data: bytes, engine: str, *, timeout_s: float = 120.0, memory_mb: int | None = None
) -> FidelityReport:
    """The check in a child process, killed after timeout_s and limited to memory_mb of
    address space (by default the ``fidelity_memory_mb`` setting, below the checks function's
    memory): a workbook that exceeds either is reported as "timeout" or "failed"."""
    if memory_mb is None:
        memory_mb = get_settings().fidelity_memory_mb
    started = time.perf_counter()
    command = [sys.executable, "-m", "shared.calc.fidelity.fence", "--engine", engine,
               "--memory-mb", str(memory_mb)]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1", "TQDM_DISABLE": "1"}
    try:
        done = subprocess.run(
            command, input=data, capture_output=True, timeout=timeout_s, env=env, check=False
        )
    except subprocess.TimeoutExpired:
        return FidelityReport(
            engine=engine, status="timeout", seconds=time.perf_counter() - started,
            error=f"no answer within {timeout_s:g} s",
        )
    if done.returncode == 2:
        raise WorkbookError(UNREADABLE)
    try:
        report = FidelityReport.from_dict(json.loads(done.stdout))
    except (ValueError, TypeError):
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        kind = "out of memory" if b"MemoryError" in done.stderr else tail[0][:300]
        return FidelityReport(
            engine=engine, status="failed", seconds=time.perf_counter() - started,
            error=f"exit {done.returncode}: {kind}",
        )
    report.seconds = time.perf_counter() - started
    return report


def _child(argv: list[str]) -> int:
    """Child side of check_isolated: xlsx on stdin, the report as JSON on stdout."""
    import argparse
    import resource

    parser = argparse.ArgumentParser()
    parser.add_argument("--engine", required=True)
    parser.add_argument("--memory-mb", type=int, required=True)
    args = parser.parse_args(argv)
    limit = args.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    data = sys.stdin.buffer.read()
    try:
        report = check(data, args.engine)
    except WorkbookError:
        return 2
    except MemoryError:
        report = FidelityReport(engine=args.engine, status="failed", error="out of memory")
    sys.stdout.write(json.dumps(report.to_dict(), default=str))
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
