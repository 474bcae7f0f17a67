"""The dev stack's child processes, seen from inside: ``python -m shared.devstack.children ROLE``.

Roles (``sheetcalc dev`` starts one ``aws``, ``dev_api_workers`` × ``api`` and
``dev_worker_processes`` × ``pollers``; ``processes.spawn`` starts each):

- ``aws``: moto's server with the bucket and queues (``local_aws.start_local_aws``, objects
  mirrored to the data dir), answering only requests signed with the dev stack's key pair (the
  environment it is started with, ``local_aws.use_dev_credentials``); reports the addresses.
- ``api``: uvicorn serving ``create_app()`` on the listening socket the parent bound and passed
  down (each API process its own socket of one SO_REUSEPORT group on the port; the kernel spreads
  new connections over them).
- ``pollers``: the Lambda handlers behind SQS pollers (``pollers.SqsPoller``). Each such process
  polls the jobs queue; the first also polls the dead-letter, checks and webhooks queues and
  runs the sweeper timer (one of each, as on AWS).

A child first imports what its role needs, then reads its configuration and the environment to
add from stdin (``processes.Child.configure``), then runs its role. Each child dies with the
parent (``PR_SET_PDEATHSIG`` with SIGKILL on Linux, as if it had been killed with it; elsewhere a
thread that watches the parent), ignores SIGINT (a terminal's Ctrl-C reaches the whole process
group; the parent stops the children in order; uvicorn, while it serves, takes SIGINT as the
same graceful shutdown as SIGTERM) and stops cleanly on SIGTERM.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from shared.devstack.processes import StopRequest

log = logging.getLogger(__name__)

Ready = Callable[[dict], None]

_PR_SET_PDEATHSIG = 1
# A poller process finishing a batch on SIGTERM gets this long. A formulas check may run longer
# (up to its 840 s deadline): stopped, its message comes back and the check runs again.
_FINISH_BATCH_SECONDS = 300.0


def die_with_parent(parent_pid: int) -> None:
    """Be killed when the parent goes, whichever way it goes (SIGKILL included)."""
    armed = False
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != parent_pid:  # the parent went before the request was made
        os._exit(1)
    if not armed:
        def watch() -> None:
            while os.getppid() == parent_pid:
                threading.Event().wait(1.0)
            os.kill(os.getpid(), signal.SIGKILL)

        threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _stop_on_sigterm() -> StopRequest:
    stop = StopRequest()  # not a threading.Event: see StopRequest
    signal.signal(signal.SIGTERM, lambda _signum, _frame: stop.set())
    return stop


def _wait(stop: StopRequest) -> None:
    while not stop.wait(1.0):
        pass


def _log_library_lines() -> None:
    # The service's own loggers (shared.*, functions.*) at the level asked for, on stderr.
    from shared.config import get_settings

    level = get_settings().log_level
    if not level:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for name in ("shared", "functions"):
        library = logging.getLogger(name)
        library.setLevel(level.upper())
        library.addHandler(handler)


def run_aws(config: dict, ready: Ready) -> None:
    from shared.devstack.local_aws import start_local_aws

    stop = _stop_on_sigterm()
    aws = start_local_aws(state_dir=Path(config["state_dir"]))
    try:
        ready(aws.addresses())
        _wait(stop)
    finally:
        aws.stop()


def run_api(config: dict, ready: Ready) -> None:
    import uvicorn

    from shared.api.app import create_app

    server: uvicorn.Server | None = None
    stopping = StopRequest()  # set by the signal handler below

    def request_stop(_signum, _frame) -> None:
        # Also lands here, harmlessly, when uvicorn re-raises the SIGTERM it caught while serving.
        stopping.set()
        if server is not None:
            server.should_exit = True

    signal.signal(signal.SIGTERM, request_stop)
    listener = socket.socket(fileno=config["fd"])

    class Server(uvicorn.Server):
        async def startup(self, sockets=None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                ready({})

    # proxy_headers off: uvicorn would otherwise believe X-Forwarded-For from 127.0.0.1 and hand
    # the app a forged client address; only SHEETCALC_TRUSTED_PROXIES (shared/api/deps.py) decides.
    server = Server(uvicorn.Config(create_app(), log_level="warning", access_log=False, proxy_headers=False))
    if stopping.is_set():
        return
    # uvicorn handles SIGINT and SIGTERM itself while it serves (a graceful shutdown).
    server.run(sockets=[listener])


def _pollers(aws, *, first: bool) -> list:
    from functions.checks.app import handler as checks_handler
    from functions.checks.dlq import handler as checks_dlq_handler
    from functions.webhook.app import handler as webhook_handler
    from functions.worker.app import handler as worker_handler
    from functions.worker.dlq import handler as dlq_handler
    from shared.devstack.local_aws import (
        CHECKS_VISIBILITY_TIMEOUT,
        JOBS_DELETE_DELAY_SECONDS,
        JOBS_GATHER_SECONDS,
        JOBS_VISIBILITY_TIMEOUT,
        WEBHOOKS_VISIBILITY_TIMEOUT,
    )
    from shared.devstack.pollers import SqsPoller

    common = {"endpoint_url": aws.endpoint_url, "region": aws.region}
    pollers = [SqsPoller(aws.jobs_queue_url, worker_handler, function_name="sheetcalc-worker",
                         timeout_seconds=JOBS_VISIBILITY_TIMEOUT, delete_delay_seconds=JOBS_DELETE_DELAY_SECONDS,
                         gather_seconds=JOBS_GATHER_SECONDS, **common)]
    if first:
        pollers += [
            SqsPoller(aws.jobs_dlq_url, dlq_handler, function_name="sheetcalc-worker-dlq", **common),
            # The slow lane: its own poller (one job at a time, as its reserved concurrency of one on
            # AWS would) and its own fenced children, so quick versions' jobs never wait behind it.
            SqsPoller(aws.slow_jobs_queue_url, worker_handler, function_name="sheetcalc-slow-worker", batch_size=1,
                      timeout_seconds=JOBS_VISIBILITY_TIMEOUT, **common),
            SqsPoller(aws.slow_jobs_dlq_url, dlq_handler, function_name="sheetcalc-slow-worker-dlq", **common),
            # As on AWS, one version check at a time, beside the jobs rather than in front of them.
            SqsPoller(aws.checks_queue_url, checks_handler, function_name="sheetcalc-checks", batch_size=1,
                      timeout_seconds=CHECKS_VISIBILITY_TIMEOUT, **common),
            SqsPoller(aws.checks_dlq_url, checks_dlq_handler, function_name="sheetcalc-checks-dlq", **common),
            SqsPoller(aws.webhooks_queue_url, webhook_handler, function_name="sheetcalc-webhook",
                      timeout_seconds=WEBHOOKS_VISIBILITY_TIMEOUT, **common),
        ]
    return pollers


def run_pollers(config: dict, ready: Ready) -> None:
    from shared.config import get_settings
    from shared.db.session import reset_engines
    from shared.devstack.local_aws import LocalAws
    from shared.devstack.sweeping import SweeperTimer

    stop = _stop_on_sigterm()
    first = config["queues_empty_since"] is not None
    pollers = _pollers(LocalAws(**config["aws"]), first=first)
    sweeper = None
    try:
        for poller in pollers:
            poller.start()
        if first:
            sweeper = SweeperTimer(queues_empty_since=datetime.fromisoformat(config["queues_empty_since"]),
                                   interval_seconds=get_settings().sweeper_interval_seconds)
            sweeper.start()
        ready({})
        _wait(stop)
    finally:
        if sweeper is not None:
            sweeper.stop()
        for poller in pollers:
            poller.finish(timeout=0)
        for poller in pollers:
            if not poller.finish(timeout=_FINISH_BATCH_SECONDS):
                log.warning("%s: a batch was still being handled when it was stopped", poller.function_name)
        reset_engines()


ROLES: dict[str, Callable[[dict, Ready], None]] = {"aws": run_aws, "api": run_api, "pollers": run_pollers}
# Imported before the configuration arrives (none of them reads a setting when imported).
_PRELOAD = {
    "aws": ["shared.devstack.local_aws"],
    "api": ["uvicorn", "shared.api.app"],
    "pollers": ["functions.worker.app", "functions.worker.dlq", "functions.checks.app", "functions.checks.dlq",
                "functions.webhook.app", "shared.devstack.pollers", "shared.devstack.sweeping"],
}


def _freeze_what_is_loaded() -> None:
    """Keep the garbage collector's full passes off everything loaded at start.

    A started child holds about 200,000 objects (the service's modules, the app, moto), and each
    full collection walked them all: 240-270 ms with every thread stopped, which is what a /health
    at full load hit now and then (113-335 ms). Frozen, they are left out of every collection
    (a full pass then walks only what came later); what is garbage among them is collected first.
    """
    gc.collect()
    gc.freeze()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shared.devstack.children")
    parser.add_argument("role", choices=sorted(ROLES))
    parser.add_argument("--parent-pid", type=int, required=True)
    parser.add_argument("--ready-fd", type=int, required=True)
    args = parser.parse_args(argv)
    die_with_parent(args.parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda _signum, _frame: os._exit(0))  # until the role takes over
    for module in _PRELOAD[args.role]:
        importlib.import_module(module)
    line = sys.stdin.readline()  # Child.configure
    if not line:
        os._exit(0)  # stopped before it was configured
    message = json.loads(line)
    os.environ.update(message["env"])
    from shared.config import reset_settings

    reset_settings()
    _log_library_lines()

    def ready(report: dict) -> None:
        _freeze_what_is_loaded()
        with os.fdopen(args.ready_fd, "wb") as pipe:
            pipe.write(json.dumps(report).encode() + b"\n")

    ROLES[args.role](message["config"], ready)
    # Everything is closed by now (connections, servers, pollers finished): skip the interpreter's
    # module-by-module teardown, which took seconds on a busy machine, and threads still in a long poll.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
