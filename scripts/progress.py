"""scripts/test.sh's progress lines and end report, from the files each part leaves in LOGS:
NAME.log (its output), NAME.progress (pytest's, written by tests/progress_plugin.py) and
NAME.status ("EXIT_CODE SECONDS", once the part has ended).

  progress.py watch LOGS SECONDS NAME...   every SECONDS, one line per part, until all have ended
  progress.py report LOGS NAME...          the end report: verdicts, each failed part's first
                                           failure, the slowest tests
  progress.py summary LOGS TOTAL NAME...   one verdict line per part, then the tests of all parts
                                           ("total: N passed, N failed, N skipped")
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

TITLES = {"sqlite": "tests on SQLite", "postgres": "tests on PostgreSQL", "template": "template checks"}
WIDTH = max(len(title) for title in TITLES.values())
LOG_TAIL = 25  # lines of a failed part's log shown when pytest recorded no failure of its own
SLOWEST = 10


def title(name: str) -> str:
    return TITLES.get(name, name)


def read_progress(logs: Path, name: str) -> dict | None:
    try:
        return json.loads((logs / f"{name}.progress").read_text())
    except (OSError, ValueError):
        return None


def read_status(logs: Path, name: str) -> tuple[int, int] | None:
    try:
        code, seconds = (logs / f"{name}.status").read_text().split()
        return int(code), int(seconds)
    except (OSError, ValueError):
        return None


def last_line(logs: Path, name: str) -> str:
    try:
        lines = [line.strip() for line in (logs / f"{name}.log").read_text(errors="replace").splitlines()]
    except OSError:
        return ""
    lines = [line for line in lines if line]
    return lines[-1][:100] if lines else ""


def minutes(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


def counts_text(progress: dict) -> str:
    counts = progress["counts"]
    parts = [f"{counts['passed']} passed"]
    parts += [f"{counts[key]} {key}" for key in ("failed", "errors", "skipped", "xfailed", "xpassed") if counts[key]]
    return ", ".join(parts)


def verdict(logs: Path, name: str) -> str:
    status = read_status(logs, name)
    progress = read_progress(logs, name)
    counts = f": {counts_text(progress)}" if progress and progress["done"] else ""
    if status is None:
        return f"{title(name)}: did not finish{counts}"
    code, seconds = status
    result = "passed" if code == 0 else f"FAILED (exit {code})"
    return f"{title(name)}: {result} in {minutes(seconds)}{counts}"


def progress_line(logs: Path, name: str, now: float) -> str:
    label = f"{title(name):<{WIDTH}}"
    if read_status(logs, name) is not None:
        return f"   {label}  ended: {verdict(logs, name).split(': ', 1)[1]}"
    progress = read_progress(logs, name)
    if progress is None:
        line = last_line(logs, name)
        return f"   {label}  " + (f"running; last line: {line}" if line else "starting")
    if progress["collected"] is None:
        return f"   {label}  collecting the tests"
    text = f"   {label}  {progress['done']}/{progress['collected']}: {counts_text(progress)}"
    failure = progress.get("first_failure")
    if failure:
        text += f"; first failure: {failure['test']}"
    running = progress.get("running")
    if running and now - running["since"] >= 30:  # a test that takes long shows which it is
        text += f"; running {running['test']} for {minutes(now - running['since'])}"
    return text


def watch(logs: Path, every: float, names: list[str]) -> None:
    started, parent = time.time(), os.getppid()
    while True:
        deadline = time.time() + every
        while time.time() < deadline:
            if all(read_status(logs, name) is not None for name in names) or os.getppid() != parent:
                return  # every part has ended, or test.sh has
            time.sleep(1)
        now = time.time()
        print(f"-- {minutes(now - started)} elapsed", flush=True)
        for name in names:
            print(progress_line(logs, name, now), flush=True)


def report(logs: Path, names: list[str]) -> None:
    print("== results")
    for name in names:
        print(verdict(logs, name))
    for name in names:
        status = read_status(logs, name)
        if status is not None and status[0] == 0:
            continue
        progress = read_progress(logs, name) or {}
        failure = progress.get("first_failure")
        if failure:
            print(f"== first failure of the {title(name)}: {failure['test']} ({failure['when']})")
            print("\n".join("   " + line for line in failure["crash"].splitlines()))
            continue
        if progress.get("running"):
            print(f"== the {title(name)} ended while running {progress['running']['test']}")
        else:
            print(f"== the {title(name)} failed; the end of its log:")
        try:
            lines = (logs / f"{name}.log").read_text(errors="replace").splitlines()
        except OSError:
            lines = ["(no log)"]
        print("\n".join("   " + line for line in lines[-LOG_TAIL:]))
    slowest = []
    for name in names:
        for test in (read_progress(logs, name) or {}).get("slowest", []):
            slowest.append((test["seconds"], name, test["test"]))
    if slowest:
        print(f"== the slowest tests (of {', '.join(n for n in names if read_progress(logs, n))})")
        for seconds, name, test in sorted(slowest, reverse=True)[:SLOWEST]:
            print(f"   {seconds:7.1f} s  {name:<8}  {test}")


def main(argv: list[str]) -> int:
    match argv:
        case ["watch", logs, every, *names]:
            watch(Path(logs), float(every), names)
        case ["report", logs, *names]:
            report(Path(logs), names)
        case ["summary", logs, total, *names]:
            print(f"== summary (total {minutes(int(total))})")
            for name in names:
                print(verdict(Path(logs), name))
            # the tests of every part, in the form CI reads a closing line in
            runs = [progress["counts"] for name in names if (progress := read_progress(Path(logs), name))]
            if runs:
                passed, failed, skipped = (sum(sum(c[k] for k in keys) for c in runs)
                                           for keys in (("passed", "xpassed"), ("failed", "errors"), ("skipped", "xfailed")))
                print(f"total: {passed} passed, {failed} failed, {skipped} skipped")
        case _:
            sys.exit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
