"""``run_dev``: the whole service on one machine (``sheetcalc dev``), as one unit of processes.

It binds the API's port, starts a local AWS (moto) in its own process, points the settings at it,
migrates the database, then starts ``dev_api_workers`` API processes (uvicorn, each accepting on
its own socket of one SO_REUSEPORT group on the port) and ``dev_worker_processes`` poller
processes running the worker, checks, dead-letter and webhook handlers behind SQS pollers (the
same Lambda handler code as on AWS; see ``children.py``). It prints "ready" when every process
is, and runs until SIGINT or SIGTERM, after which it stops the API and poller processes (each
finishes what it is handling), then the local AWS, and returns normally. If a child ends on its
own, everything is stopped and it exits with status 1. The children die with it when it is
killed (``processes.py``).

Nothing accepted is lost when it is killed: the database and the local S3 objects are under the
data dir (``<data dir>/aws``), and at start the sweeper queues again what the lost in-memory
queues held (jobs pending or past their lease, webhooks never attempted, version checks), then
keeps sweeping on a timer. Nor does it wait for what the killed run's processes held: before its
workers start, the jobs left processing by processes of this machine that are gone (each claim
names its process: ``shared.claimants``) are handed back and queued again, not a lease later.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import shlex
import signal
import socket
import sys
import threading
import time
from pathlib import Path

from shared.adapters.aws import reset_clients
from shared.config import reset_settings
from shared.db.session import reset_engines
from shared.devstack.local_aws import LocalAws, ensure_dummy_credentials, use_dev_credentials
from shared.devstack.processes import Child, ChildFailed, StopRequest, spawn, stop_all

SECRETS_FILE = "secrets.json"
_SECRET_ENV = {"jwt_secret": "SHEETCALC_JWT_SECRET", "encryption_key": "SHEETCALC_ENCRYPTION_KEY"}


def load_dev_secrets(data_dir: Path) -> None:
    """Put the dev secrets in the environment, generated once into ``data_dir/secrets.json``.

    Variables already set win. Persisting the secrets keeps sessions and encrypted fields
    readable across restarts of the dev server.
    """
    missing = {key: env for key, env in _SECRET_ENV.items() if not os.environ.get(env)}
    if not missing:
        return
    path = data_dir / SECRETS_FILE
    stored = json.loads(path.read_text()) if path.exists() else {}
    if any(not stored.get(key) for key in missing):
        for key in missing:
            stored.setdefault(key, secrets.token_urlsafe(48))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as file:
            json.dump(stored, file, indent=2)
    os.chmod(path, 0o600)
    for key, env in missing.items():
        os.environ[env] = stored[key]


def _point_settings_at(aws: LocalAws | None, data_dir: Path) -> None:
    """The settings of a dev stack on ``data_dir`` (in the environment, for the children too);
    without ``aws``, those the database needs."""
    os.environ.update({"SHEETCALC_ENV": "dev", "SHEETCALC_DATA_DIR": str(data_dir)})
    reset_settings()
    reset_engines()
    if aws is None:
        return
    ensure_dummy_credentials(aws.region)
    os.environ.update({
        "SHEETCALC_AWS_ENDPOINT_URL": aws.endpoint_url,
        "SHEETCALC_AWS_REGION": aws.region,
        "SHEETCALC_BUCKET": aws.bucket,
        "SHEETCALC_JOBS_QUEUE_URL": aws.jobs_queue_url,
        "SHEETCALC_SLOW_JOBS_QUEUE_URL": aws.slow_jobs_queue_url,
        "SHEETCALC_CHECKS_QUEUE_URL": aws.checks_queue_url,
        "SHEETCALC_WEBHOOKS_QUEUE_URL": aws.webhooks_queue_url,
    })
    reset_settings()
    reset_clients()
    reset_engines()


# Only a hung process reaches these: no verdict depends on the machine's speed.
START_TIMEOUT_SECONDS = 180.0
# API processes finish the requests they hold, poller processes the batch they handle; a child
# still running after this is killed (a formulas check it held comes back and runs again).
STOP_TIMEOUT_SECONDS = 300.0
AWS_STOP_TIMEOUT_SECONDS = 30.0
# How often the parent looks whether a child ended on its own.
_SUPERVISE_INTERVAL_SECONDS = 0.5


def _listen(host: str, port: int, count: int) -> list[socket.socket]:
    """``count`` listening sockets on one port, one per API process, in one SO_REUSEPORT group.

    The kernel spreads new connections over the group by their addresses. One socket shared by
    every process was not spread: the process that woke first accepted a whole burst of
    connections, and clients that keep their connections (every HTTP client pool) then stayed on
    it, so under 16 clients one API process did 99% of the work and the other idled.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(family, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind((host, port if len(sockets) == 1 else sockets[0].getsockname()[1]))
        # Another process of this user listening with SO_REUSEPORT on the port (a second
        # ``sheetcalc dev --port 8000``) would let these bind and share its connections: refuse.
        if _someone_listens(family, host, sockets[0].getsockname()[1]):
            raise OSError(errno.EADDRINUSE, os.strerror(errno.EADDRINUSE))
        for sock in sockets:
            sock.listen(2048)
            sock.set_inheritable(True)
    except OSError as exc:
        for sock in sockets:
            sock.close()
        raise SystemExit(f"sheetcalc dev: cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sockets


def _someone_listens(family: int, host: str, port: int) -> bool:
    probe = socket.socket(family, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        target = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
        return probe.connect_ex((target, port)) == 0
    except OSError:
        return False
    finally:
        probe.close()


def _announce(host: str, port: int, data_dir: Path) -> None:
    base_url = f"http://{_url_host(host)}:{port}"
    # What the README's walkthrough asks for, to reach this server and its database.
    walkthrough = f"export BASE={base_url} DATA_DIR={shlex.quote(str(data_dir))}"
    if os.environ.get("DATABASE_URL") or os.environ.get("SHEETCALC_DATABASE_URL"):
        walkthrough += " (and the same DATABASE_URL)"
    for line in (f"API on {base_url}", f"dashboard on {base_url}/dashboard/", f"walkthrough: {walkthrough}", "ready"):
        print(f"sheetcalc dev: {line}", flush=True)


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", "::"):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def _release_dead_claims() -> None:
    """Hand back, and queue again, the jobs a killed run's processes left claimed
    (``shared.services.dead_claims``); when it cannot, their lease still brings them back."""
    from shared.services import dead_claims

    try:
        released = dead_claims.release()
    except Exception as exc:  # the start goes on: the lease is the fallback
        print(f"sheetcalc dev: could not hand back the jobs of processes that are gone ({type(exc).__name__}); "
              "their lease will", file=sys.stderr, flush=True)
        return
    if released:
        print(f"sheetcalc dev: {released} jobs left processing by processes that are gone were queued again", flush=True)


def _first_to_end(children: list[Child], stop_requested: StopRequest) -> str | None:
    """Wait for a stop request (None) or for a child to end on its own (what happened)."""
    while not stop_requested.wait(_SUPERVISE_INTERVAL_SECONDS):
        for child in children:
            if not child.running():
                return f"the {child.role} process (pid {child.pid}) exited with status {child.process.returncode}"
    return None


def run_dev(host: str = "127.0.0.1", port: int = 8000, data_dir: Path = Path(".sheetcalc")) -> None:
    """Serve API, worker, webhook sender and local AWS on this machine until SIGINT/SIGTERM, in
    ``dev_api_workers`` API and ``dev_worker_processes`` poller processes (the settings)."""
    data_dir = Path(data_dir).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    load_dev_secrets(data_dir)
    use_dev_credentials(data_dir)  # the local AWS answers only these (shared/devstack/local_auth.py)

    stop_requested = StopRequest()  # set by the signal handler below: not a threading.Event

    def request_stop(_signum, _frame) -> None:
        stop_requested.set()

    previous: dict = {}
    if threading.current_thread() is threading.main_thread():
        previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    listeners: list[socket.socket] = []
    aws_child: Child | None = None
    children: list[Child] = []
    failed: str | None = None
    try:
        from shared.db.types import utcnow

        queues_empty_since = utcnow()  # moto's queues begin empty: no message is older
        _point_settings_at(None, data_dir)
        from shared.config import get_settings
        from shared.db.migrate import upgrade

        settings = get_settings()
        listeners = _listen(host, port, settings.dev_api_workers)
        aws_child = spawn("aws", {"state_dir": str(data_dir / "aws")})
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        # The API and poller processes import the service while the local AWS starts and the
        # database is migrated here; they are configured once both are done.
        api = [spawn("api", pass_fds=(listener.fileno(),)) for listener in listeners]
        pollers = [spawn("pollers") for _ in range(settings.dev_worker_processes)]
        children = [*api, *pollers]
        upgrade()
        addresses = aws_child.wait_ready(deadline, stop_requested)
        if stop_requested.is_set():
            return
        aws = LocalAws(**addresses)
        _point_settings_at(aws, data_dir)
        _release_dead_claims()  # before the workers are configured: none of them claims yet
        env = dict(os.environ)
        for child, listener in zip(api, listeners):
            child.configure({"fd": listener.fileno()}, env)
        for i, child in enumerate(pollers):
            since = queues_empty_since.isoformat() if i == 0 else None
            child.configure({"aws": aws.addresses(), "queues_empty_since": since}, env)
        for child in children:
            child.wait_ready(deadline, stop_requested)
        if stop_requested.is_set():
            return
        _announce(host, listeners[0].getsockname()[1], data_dir)  # the real port, also for --port 0
        failed = _first_to_end([*children, aws_child], stop_requested)
    except ChildFailed as exc:
        failed = str(exc)
    finally:
        for child in stop_all(children, STOP_TIMEOUT_SECONDS):
            print(f"sheetcalc dev: the {child.role} process (pid {child.pid}) did not stop; killed it",
                  file=sys.stderr, flush=True)
        if aws_child is not None:
            stop_all([aws_child], AWS_STOP_TIMEOUT_SECONDS)
        for listener in listeners:
            listener.close()
        reset_engines()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sys.stdout.flush()
    if failed:
        raise SystemExit(f"sheetcalc dev: {failed}; stopped everything")
