"""``dev_stack``: the whole service started as ``python -m shared.cli dev`` in a subprocess.

The subprocess gets the environment the test run started with, minus ``SHEETCALC_*`` (the
in-process fixtures point those at their own moto server), so it configures itself the way
``sheetcalc dev`` does for a user: SQLite under its data dir, or PostgreSQL when the run has
``DATABASE_URL`` (or ``SHEETCALC_TEST_DATABASE_URL``). Its output goes to a file that failing
fixtures print.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import make_url

from shared.devstack.load_limits import RAISED_LIMITS

REPO = Path(__file__).resolve().parents[2]
READY_LINE = "sheetcalc dev: ready"
# Deadlines only a hung process reaches, not a busy machine: no verdict depends on speed.
START_TIMEOUT_SECONDS = 180
STOP_TIMEOUT_SECONDS = 60

# Read at collection, before session fixtures (tests/conftest.py) rewrite os.environ.
_ENV_AT_START = dict(os.environ)


@dataclass
class DevStack:
    """A running ``sheetcalc dev``: where it answers, its data dir, process and output."""

    base_url: str
    data_dir: Path
    process: subprocess.Popen
    log_path: Path
    env: dict[str, str]

    def output(self) -> str:
        """Everything the process has written to stdout and stderr so far."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def children(self) -> dict[int, str]:
        """The stack's child processes (Linux, from /proc): pid -> role (aws, api, pollers)."""
        found = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
                argv = (stat.parent / "cmdline").read_bytes().split(b"\0")
            except (OSError, IndexError, ValueError):
                continue
            if ppid == self.process.pid and b"shared.devstack.children" in argv:
                found[int(stat.parent.name)] = argv[argv.index(b"shared.devstack.children") + 1].decode()
        return found

    def cli(self, *args: str, **kwargs) -> subprocess.CompletedProcess:
        """Run another ``sheetcalc`` command against the same database and data dir."""
        return subprocess.run(
            [sys.executable, "-m", "shared.cli", *args], cwd=REPO, env=self.env,
            capture_output=True, text=True, **kwargs,
        )


# These stacks serve tests that drive one key of one tenant hard (50 waiters at once, 20 or 24
# clients, a kill under load, 2,000 jobs by hand), so they raise the brakes explicitly
# (shared/devstack/load_limits.py); tests/e2e/test_abuse_brakes.py starts its burst's stack with
# the defaults.


def dev_stack_env() -> dict[str, str]:
    """The subprocess's environment: the run's own, without the test fixtures' SHEETCALC_*, with
    the brakes on one key raised (``RAISED_LIMITS``)."""
    env = {name: value for name, value in _ENV_AT_START.items() if not name.startswith("SHEETCALC_")}
    env.update(RAISED_LIMITS)
    database_url = _ENV_AT_START.get("DATABASE_URL") or _ENV_AT_START.get("SHEETCALC_TEST_DATABASE_URL")
    if database_url:
        env["DATABASE_URL"] = _dev_stacks_database(database_url)
    env["PYTHONUNBUFFERED"] = "1"
    # As in tests/conftest.py: the upload reader's deadline is generous, so a loaded machine does
    # not refuse the test's workbooks (no e2e test is about that deadline).
    env["SHEETCALC_UPLOAD_PARSE_TIMEOUT_SECONDS"] = "300"
    return env


def second_deployment_env() -> dict[str, str]:
    """The environment of a dev stack standing for another deployment: on PostgreSQL a database
    of its own (``<tests' database>_elsewhere``, dropped by scripts/test.sh with the others), not
    the one the run's dev stacks share; on SQLite every dev stack has its own already."""
    database_url = _ENV_AT_START.get("DATABASE_URL") or _ENV_AT_START.get("SHEETCALC_TEST_DATABASE_URL")
    if not database_url or not database_url.startswith("postgres"):
        return {}
    return {"DATABASE_URL": _dev_stacks_database(database_url, suffix="elsewhere")}


def _dev_stacks_database(url: str, suffix: str = "devstacks") -> str:
    """The database the run's dev stacks share: on PostgreSQL, one of their own beside the tests'
    (created once, dropped by scripts/test.sh with the tests' one). A dev stack's sweeper queues
    every pending job it finds and its worker then fails those it cannot calculate: in the tests'
    own database it took the jobs other tests made as data (the statistics tests' 'pending' jobs
    of May) and changed them between two reads of a test."""
    if not url.startswith("postgres"):
        return url
    parsed = make_url(url)
    name = f"{parsed.database}_{suffix}"
    if name not in _created_databases:
        admin_url = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
        subprocess.run([sys.executable, str(REPO / "scripts" / "pgdb.py"), "ensure", admin_url, name], check=True)
        _created_databases.add(name)
    return parsed.set(database=name).render_as_string(hide_password=False)


_created_databases: set[str] = set()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_until_ready(stack: DevStack) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if stack.process.poll() is not None:
            pytest.fail(f"sheetcalc dev exited with {stack.process.returncode}:\n{stack.output()}")
        if READY_LINE in stack.output():
            try:
                if httpx.get(f"{stack.base_url}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
        time.sleep(0.1)
    pytest.fail(f"sheetcalc dev not ready after {START_TIMEOUT_SECONDS} s:\n{stack.output()}")


def _stop(stack: DevStack) -> int:
    if stack.process.poll() is None:
        stack.process.send_signal(signal.SIGTERM)
        try:
            stack.process.wait(STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            stack.process.kill()
            stack.process.wait()
            pytest.fail(f"sheetcalc dev ignored SIGTERM for {STOP_TIMEOUT_SECONDS} s:\n{stack.output()}")
    return stack.process.returncode


@pytest.fixture(scope="session")
def dev_stack(tmp_path_factory) -> DevStack:
    """``sheetcalc dev`` on a free port with a fresh data dir, ready to answer; stopped after."""
    root = tmp_path_factory.mktemp("dev-stack")
    data_dir = root / "data"
    log_path = root / "dev-stack.log"
    port = free_port()
    env = dev_stack_env()
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "shared.cli", "dev", "--host", "127.0.0.1", "--port", str(port),
             "--data-dir", str(data_dir)],
            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
    stack = DevStack(f"http://127.0.0.1:{port}", data_dir, process, log_path, env)
    try:
        _wait_until_ready(stack)
        yield stack
    finally:
        returncode = _stop(stack)
    assert returncode == 0, f"sheetcalc dev exited with {returncode}:\n{stack.output()}"


RESTARTABLE_STOP_TIMEOUT_SECONDS = 120


class RestartableDevStack:
    """``sheetcalc dev`` on one data dir and port, started, killed and started again at will.

    Each run writes its own log (``runs[i].log_path``); ``env`` is added to ``dev_stack_env()``.
    """

    def __init__(self, root: Path, env: dict[str, str]):
        self.data_dir = root / "data"
        self.root = root
        self.port = free_port()
        self.env = {**dev_stack_env(), **env}
        self.runs: list[DevStack] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def current(self) -> DevStack:
        return self.runs[-1]

    def start(self) -> DevStack:
        """Start a new run and wait until it answers."""
        log_path = self.root / f"dev-stack-run{len(self.runs) + 1}.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "shared.cli", "dev", "--host", "127.0.0.1", "--port", str(self.port),
                 "--data-dir", str(self.data_dir)],
                cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )
        stack = DevStack(self.base_url, self.data_dir, process, log_path, self.env)
        self.runs.append(stack)
        _wait_until_ready(stack)
        return stack

    def kill(self) -> None:
        """SIGKILL the current run: no shutdown code runs."""
        self.current.process.send_signal(signal.SIGKILL)
        self.current.process.wait()

    def stop(self) -> int:
        """SIGTERM the current run; a run still busy with a backlog may take a while to stop,
        but one that has not stopped after a hang-sized wait fails the test."""
        process = self.current.process
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(RESTARTABLE_STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                pytest.fail(f"sheetcalc dev ignored SIGTERM for {RESTARTABLE_STOP_TIMEOUT_SECONDS} s:\n{self.current.output()}")
        return process.returncode


@pytest.fixture()
def restartable_dev_stack(tmp_path_factory):
    """A factory: ``restartable_dev_stack(env)`` -> a ``RestartableDevStack`` (not started);
    whatever run is still alive at the end is stopped."""
    made: list[RestartableDevStack] = []

    def make(env: dict[str, str] | None = None) -> RestartableDevStack:
        made.append(RestartableDevStack(tmp_path_factory.mktemp("restartable-dev-stack"), env or {}))
        return made[-1]

    yield make
    for stack in made:
        if stack.runs:
            stack.stop()
