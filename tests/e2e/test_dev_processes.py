"""`sheetcalc dev` is one unit of processes: the local AWS, API workers sharing one port (and its
clients' connections), and the
poller processes, started by one command, all stopped by SIGTERM, none left when it is killed,
and all stopped when one of them dies."""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
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


def _sockets_per_process(port: int, pids, state: str) -> dict[int, set[str]]:
    """TCP sockets on local ``port`` in ``state`` ("0A" listening, "01" established) that each of
    ``pids`` holds (Linux, /proc)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == state:
                inodes.add(f"socket:[{fields[9]}]")
    return {pid: _open_files(pid) & inodes for pid in pids}


def _open_files(pid: int) -> set[str]:
    """What a process's file descriptors point at (Linux, /proc); one it closes while they are
    read (a database connection, a log file) is left out, not an error."""
    held = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            held.add(os.readlink(fd))
        except FileNotFoundError:
            continue
    return held


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


def test_the_api_processes_share_the_connections_of_clients_that_keep_them(restartable_dev_stack):
    # GIVEN sheetcalc dev with its two API processes
    stack = restartable_dev_stack({"SHEETCALC_DEV_API_WORKERS": "2"})
    run = stack.start()
    api = [pid for pid, role in run.children().items() if role == "api"]

    # WHEN 24 clients each open a connection, all at once, and keep it (as HTTP client pools do)
    clients = [httpx.Client(base_url=run.base_url, timeout=30) for _ in range(24)]
    try:
        for client in clients:
            assert client.get("/health").status_code == 200
        held = {pid: len(sockets) for pid, sockets in _sockets_per_process(stack.port, api, "01").items()}
    finally:
        for client in clients:
            client.close()

    # THEN both API processes hold some of them: the kernel spreads new connections over the
    # processes' sockets (one SO_REUSEPORT group; chance that it puts all 24 on one: 2 in 2**24)
    assert sum(held.values()) == 24, held
    assert all(count > 0 for count in held.values()), held
    # AND each process listens on a socket of its own: with one socket shared by all, the first
    # process to wake took a whole burst of connections, and under 16 busy clients one API
    # process did 99% of the work while the other idled
    listening = _sockets_per_process(stack.port, api, "0A")
    assert all(len(sockets) == 1 for sockets in listening.values()), listening
    assert len(set.union(*listening.values())) == len(api), listening


def test_a_second_dev_stack_on_a_taken_port_refuses_to_start_and_the_first_keeps_serving(restartable_dev_stack, tmp_path):
    # GIVEN a running sheetcalc dev
    stack = restartable_dev_stack()
    run = stack.start()

    # WHEN another one is started on the same port
    second = subprocess.run(
        [sys.executable, "-m", "shared.cli", "dev", "--host", "127.0.0.1", "--port", str(stack.port),
         "--data-dir", str(tmp_path / "other")],
        env=stack.env, capture_output=True, text=True, timeout=DEADLINE_SECONDS, stdin=subprocess.DEVNULL,
    )

    # THEN it says the port is taken and exits, and the first one still answers on it
    assert second.returncode != 0
    assert f"cannot listen on 127.0.0.1:{stack.port}" in second.stderr + second.stdout
    assert httpx.get(f"{run.base_url}/health", timeout=30).status_code == 200
