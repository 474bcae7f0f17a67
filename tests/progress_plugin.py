"""A pytest plugin for scripts/test.sh: the run's progress, kept up to date in a JSON file that
scripts/test_progress.py reads while the run goes on and summarises at its end.

    python -m pytest -p tests.progress_plugin --progress-file PATH ...

The file holds the number of tests collected and done, the counts by outcome, the test running
now, the first failure (its test, phase and crash line) and, once the run ends, the slowest
tests. It is replaced whole at each change (written aside, then renamed), so a reader never sees
half of it. Without ``--progress-file`` the plugin does nothing.
"""

from __future__ import annotations

import json
import os
import time

import pytest

SLOWEST = 15  # tests listed at the end
FAILURE_LINES = 20  # of the first failure's crash message


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--progress-file", default=None, help="write the run's progress to this JSON file (scripts/test.sh)")


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--progress-file")
    if path:
        config.pluginmanager.register(Progress(path), "sheetcalc-progress")


def _crash(report) -> str:
    """Where and why a report failed, in a few lines."""
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        text = f"{crash.path}:{crash.lineno}: {crash.message}"
    else:
        text = str(report.longrepr or "").strip()
        text = "\n".join(text.splitlines()[-FAILURE_LINES:])
    lines = text.splitlines()
    return "\n".join(lines[:FAILURE_LINES] + (["..."] if len(lines) > FAILURE_LINES else []))


class Progress:
    def __init__(self, path: str):
        self.path = path
        self.state = {
            "collected": None, "done": 0, "running": None, "finished": False, "exit_status": None,
            "counts": {"passed": 0, "failed": 0, "errors": 0, "skipped": 0, "xfailed": 0, "xpassed": 0},
            "first_failure": None, "slowest": [],
        }
        self.durations: dict[str, float] = {}
        self.write()

    def write(self) -> None:
        aside = f"{self.path}.{os.getpid()}.tmp"
        with open(aside, "w") as out:
            json.dump(self.state, out)
        os.replace(aside, self.path)

    def _failed(self, nodeid: str, when: str, report) -> None:
        if self.state["first_failure"] is None:
            self.state["first_failure"] = {"test": nodeid, "when": when, "crash": _crash(report)}

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.state["collected"] = len(session.items)
        self.write()

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.state["counts"]["errors"] += 1
            self._failed(report.nodeid or "(collection)", "collection", report)
            self.write()

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.state["running"] = {"test": nodeid, "since": time.time()}
        self.write()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        counts = self.state["counts"]
        self.durations[report.nodeid] = self.durations.get(report.nodeid, 0.0) + report.duration
        xfail = hasattr(report, "wasxfail")
        if report.failed:
            counts["failed" if report.when == "call" else "errors"] += 1
            self._failed(report.nodeid, report.when, report)
        elif report.skipped and report.when in ("setup", "call"):
            counts["xfailed" if xfail else "skipped"] += 1
        elif report.passed and report.when == "call":
            counts["xpassed" if xfail else "passed"] += 1

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self.state["done"] += 1
        self.state["running"] = None
        self.write()

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        slowest = sorted(self.durations.items(), key=lambda item: item[1], reverse=True)[:SLOWEST]
        self.state.update(finished=True, exit_status=int(exitstatus), running=None,
                          slowest=[{"test": test, "seconds": round(seconds, 1)} for test, seconds in slowest])
        self.write()
