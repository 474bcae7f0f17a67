"""scripts/test.sh's progress: tests/progress_plugin.py writes a part's progress as pytest runs,
scripts/progress.py turns it into the progress lines and the end report (a pytest run of a few
tests of its own, in a subprocess, stands for a part)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HANG_SECONDS = 300

PART = textwrap.dedent("""
    import pytest

    def test_passes():
        pass

    def test_fails_first():
        assert 2 == 3

    @pytest.mark.skip(reason="not today")
    def test_skipped():
        pass

    def test_fails_second():
        raise RuntimeError("second")
""")


def run_part(logs: Path, name: str, tests: Path) -> None:
    """One part as scripts/test.sh runs it: its log, its progress file, its status line."""
    with open(logs / f"{name}.log", "w") as log:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.progress_plugin",
             "--progress-file", str(logs / f"{name}.progress"), "--rootdir", str(tests.parent), str(tests)],
            cwd=REPO, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=HANG_SECONDS, check=False,
        )
    (logs / f"{name}.status").write_text(f"{done.returncode} 7\n")


def progress(*args: str) -> str:
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "progress.py"), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=HANG_SECONDS, check=True)
    return done.stdout


def test_a_part_s_progress_counts_each_outcome_and_keeps_the_first_failure(tmp_path):
    # GIVEN a part whose tests pass, fail twice and skip
    tests = tmp_path / "part" / "test_part.py"
    tests.parent.mkdir()
    tests.write_text(PART)
    logs = tmp_path / "logs"
    logs.mkdir()

    # WHEN it runs with the plugin
    run_part(logs, "sqlite", tests)

    # THEN its progress file has every count, the first failure with its line and message, and
    # the slowest tests
    state = json.loads((logs / "sqlite.progress").read_text())
    assert (state["collected"], state["done"], state["finished"], state["exit_status"]) == (4, 4, True, 1)
    assert state["counts"] == {"passed": 1, "failed": 2, "errors": 0, "skipped": 1, "xfailed": 0, "xpassed": 0}
    assert state["first_failure"]["test"].endswith("test_part.py::test_fails_first")
    assert state["first_failure"]["when"] == "call"
    assert "test_part.py:8: assert 2 == 3" in state["first_failure"]["crash"]
    assert len(state["slowest"]) == 4 and state["running"] is None


def test_the_end_report_puts_each_failed_part_s_first_failure_before_the_logs(tmp_path):
    # GIVEN a part that failed, one that passed, and one that failed without pytest (its log only)
    tests = tmp_path / "part" / "test_part.py"
    tests.parent.mkdir()
    tests.write_text(PART)
    logs = tmp_path / "logs"
    logs.mkdir()
    run_part(logs, "sqlite", tests)
    (logs / "postgres.log").write_text("scripts/pgdb.py could not create the tests' database\n")
    (logs / "postgres.status").write_text("1 0\n")
    (logs / "template.log").write_text("check.sh: template OK\n")
    (logs / "template.status").write_text("0 12\n")

    # WHEN the end report and the summary are printed
    report = progress("report", str(logs), "sqlite", "postgres", "template")
    summary = progress("summary", str(logs), "75", "sqlite", "postgres", "template")

    # THEN each verdict comes first, then the first failure of each failed part, then the slowest
    assert report.splitlines()[:4] == [
        "== results",
        "tests on SQLite: FAILED (exit 1) in 7 s: 1 passed, 2 failed, 1 skipped",
        "tests on PostgreSQL: FAILED (exit 1) in 0 s",
        "template checks: passed in 12 s",
    ]
    assert "== first failure of the tests on SQLite: " in report and "assert 2 == 3" in report
    assert "RuntimeError" not in report  # the first failure only; the log has the rest
    assert "== the tests on PostgreSQL failed; the end of its log:\n   scripts/pgdb.py could not create" in report
    assert "== the slowest tests (of sqlite)" in report
    # AND the summary ends with the tests of every part in one line
    assert summary.splitlines()[0] == "== summary (total 1 min 15 s)"
    assert summary.splitlines()[-1] == "total: 1 passed, 2 failed, 1 skipped"


def test_a_progress_line_shows_each_part_while_it_runs(tmp_path):
    # GIVEN a part half-way (progress written, no status yet), one not started, one ended
    logs = tmp_path
    (logs / "sqlite.progress").write_text(json.dumps({
        "collected": 10, "done": 4, "running": {"test": "tests/test_x.py::test_long", "since": 0}, "finished": False,
        "exit_status": None, "counts": {"passed": 3, "failed": 1, "errors": 0, "skipped": 0, "xfailed": 0, "xpassed": 0},
        "first_failure": {"test": "tests/test_x.py::test_bad", "when": "call", "crash": "x"}, "slowest": [],
    }))
    (logs / "postgres.log").write_text("")
    (logs / "template.log").write_text("check.sh: cfn-lint\n")
    (logs / "template.status").write_text("0 30\n")

    # WHEN the watcher prints its lines (every 0.1 s here), until every part has ended
    watcher = subprocess.Popen([sys.executable, str(REPO / "scripts" / "progress.py"), "watch", str(logs), "0.1",
                                "sqlite", "postgres", "template"], cwd=REPO, stdout=subprocess.PIPE, text=True)
    first = [watcher.stdout.readline() for _ in range(4)]
    (logs / "sqlite.status").write_text("1 40\n")
    (logs / "postgres.status").write_text("0 41\n")
    assert watcher.wait(HANG_SECONDS) == 0

    # THEN one line per part: counts so far, the first failure, the test running for long
    lines = [" ".join(line.split()) for line in first]
    assert lines[0].startswith("-- ") and lines[0].endswith(" elapsed")
    assert lines[1].startswith("tests on SQLite 4/10: 3 passed, 1 failed; first failure: tests/test_x.py::test_bad; "
                               "running tests/test_x.py::test_long for ")
    assert lines[2] == "tests on PostgreSQL starting"
    assert lines[3] == "template checks ended: passed in 30 s"
