"""`sheetcalc dev` is one unit of processes: the local AWS, API workers sharing one port, and the
poller processes, started by one command, all stopped by SIGTERM, none left when it is killed,
and all stopped when one of them dies."""

from __future__ import annotations

import collections
import json
import os
import signal
import sys
from pathlib import Path

import httpx
import pytest

from tests.devstack.proc import still_running

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]

# Only a hung or orphaned process reaches this: no verdict depends on the machine's speed.
DEADLINE_SECONDS = 120.0


def _listeners_on(port: int) -> dict[int, str]:
    """The processes with a listening TCP socket on ``port``, pid -> command line (Linux, /proc)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":  # 0A: LISTEN
                inodes.add(fields[9])
    owners = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            held = {os.readlink(fd) for fd in (proc / "fd").iterdir()}
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if any(f"socket:[{inode}]" in held for inode in inodes):
            owners[int(proc.name)] = command
    return owners


def _nothing_of_the_stack_listens(port: int, data_dir: Path) -> dict[int, str]:
    """Listeners on ``port`` that belong to this stack (started on ``data_dir``, or its children,
    which name their parent): none may be left. Another test run on the machine may have been
    given the freed port meanwhile; that process is not the stack's."""
    listeners = _listeners_on(port)
    ours = {pid: cmd for pid, cmd in listeners.items() if str(data_dir) in cmd or "shared.devstack" in cmd}
    return ours


def test_the_dev_stack_runs_its_parts_as_processes_and_sigterm_stops_them_all(restartable_dev_stack):
    # GIVEN sheetcalc dev with 3 API processes and 1 poller process (the settings)
    stack = restartable_dev_stack({"SHEETCALC_DEV_API_WORKERS": "3", "SHEETCALC_DEV_WORKER_PROCESSES": "1"})
    run = stack.start()

    # THEN it runs the local AWS, three API processes and one poller process under it
    children = run.children()
    assert sorted(collections.Counter(children.values()).items()) == [("api", 3), ("aws", 1), ("pollers", 1)]
    assert httpx.get(f"{run.base_url}/health", timeout=30).status_code == 200

    # WHEN it gets SIGTERM
    # THEN it exits 0, every child is gone and the port is closed
    assert stack.stop() == 0, run.output()
    assert still_running(children, DEADLINE_SECONDS) == []
    assert _nothing_of_the_stack_listens(stack.port, stack.data_dir) == {}


def test_a_killed_dev_stack_leaves_no_process_serving(restartable_dev_stack):
    # GIVEN a running sheetcalc dev (default processes)
    stack = restartable_dev_stack()
    run = stack.start()
    children = run.children()
    assert len(children) >= 4, children

    # WHEN it is killed with SIGKILL (none of its own code runs)
    stack.kill()

    # THEN its children die with it: nothing listens on its port
    assert still_running(children, DEADLINE_SECONDS) == [], run.output()
    assert _nothing_of_the_stack_listens(stack.port, stack.data_dir) == {}, _listeners_on(stack.port)
    # AND started again on the same data dir, it gets its port and local S3's port back
    s3_port = json.loads((stack.data_dir / "aws" / "endpoint.json").read_text())["port"]
    again = stack.start()
    assert json.loads((stack.data_dir / "aws" / "endpoint.json").read_text())["port"] == s3_port
    assert "is taken" not in again.output()


def test_when_one_process_dies_the_whole_stack_stops_and_says_so(restartable_dev_stack):
    # GIVEN a running sheetcalc dev
    stack = restartable_dev_stack()
    run = stack.start()
    children = run.children()
    api = next(pid for pid, role in children.items() if role == "api")

    # WHEN one API process dies
    os.kill(api, signal.SIGKILL)

    # THEN the stack stops everything and exits 1, naming the process that died
    assert run.process.wait(DEADLINE_SECONDS) == 1
    assert f"the api process (pid {api}) exited with status -9" in run.output()
    assert still_running(children, DEADLINE_SECONDS) == []
