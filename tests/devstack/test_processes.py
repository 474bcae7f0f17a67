"""The dev stack's child processes (shared/devstack/processes.py, children.py): started fresh,
ready when they say so, stopped by SIGTERM, and gone when their parent is killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from shared.devstack.processes import StopRequest, spawn, stop_all
from tests.devstack.proc import alive, still_running

REPO = Path(__file__).resolve().parents[2]
# Only a hung or orphaned process reaches these: no verdict depends on the machine's speed.
DEADLINE_SECONDS = 120.0

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# A parent that starts the local AWS child, says which pid it has, and waits to be killed.
PARENT = """
import json, sys, threading, time
from shared.devstack.processes import spawn
child = spawn("aws", {"state_dir": sys.argv[1]})
child.wait_ready(time.monotonic() + 120)
print(json.dumps({"child": child.pid}), flush=True)
threading.Event().wait()
"""


def test_a_child_reports_ready_and_stops_on_sigterm(tmp_path):
    # GIVEN the local AWS child, ready
    child = spawn("aws", {"state_dir": str(tmp_path)})
    try:
        addresses = child.wait_ready(time.monotonic() + DEADLINE_SECONDS)
        # THEN its report says where its endpoints are
        assert addresses["endpoint_url"].startswith("http://127.0.0.1:")
        assert addresses["jobs_queue_url"].endswith("/sheetcalc-jobs")
    finally:
        # WHEN it is stopped THEN it exits by itself (not killed), with status 0
        assert stop_all([child], DEADLINE_SECONDS) == []
    assert child.process.returncode == 0


def test_a_child_ignores_sigint_which_is_its_parents_to_handle(tmp_path):
    # GIVEN a ready child (a terminal's Ctrl-C reaches every process of the group)
    child = spawn("aws", {"state_dir": str(tmp_path)})
    try:
        child.wait_ready(time.monotonic() + DEADLINE_SECONDS)
        # WHEN it gets SIGINT THEN it keeps running until its parent stops it
        child.process.send_signal(signal.SIGINT)
        with pytest.raises(subprocess.TimeoutExpired):
            child.process.wait(1.0)
    finally:
        assert stop_all([child], DEADLINE_SECONDS) == []


def test_a_child_dies_with_its_parent_killed_by_sigkill(tmp_path):
    # GIVEN a parent process with a ready child
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path)], cwd=REPO, stdout=subprocess.PIPE,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        child_pid = json.loads(parent.stdout.readline())["child"]
        assert alive(child_pid)
    finally:
        # WHEN the parent is killed (no code of its own runs)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    # THEN the child does not live on as an orphan
    assert still_running([child_pid], DEADLINE_SECONDS) == [], f"child {child_pid} outlived its parent"


def test_a_stop_request_set_by_a_signal_handler_ends_the_wait():
    # GIVEN a stop request that a signal's handler sets (as SIGTERM's does in every dev process;
    # a threading.Event set there can wait forever for the lock its own wait holds)
    stop = StopRequest()
    previous = signal.signal(signal.SIGUSR1, lambda _signum, _frame: stop.set())
    try:
        # WHEN the signal arrives while the main thread waits
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGUSR1)).start()
        # THEN the wait ends as set, long before its timeout
        assert stop.wait(DEADLINE_SECONDS) is True and stop.is_set()
    finally:
        signal.signal(signal.SIGUSR1, previous)


def test_a_stop_request_not_set_waits_out_its_timeout():
    assert StopRequest().wait(0.01) is False
