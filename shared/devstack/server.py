"""``run_dev``: the whole service on one machine (``sheetcalc dev``).

It starts a local AWS (moto), points the settings at it, migrates the database, runs the worker,
checks, dead-letter and webhook handlers behind SQS pollers (one per queue, as on AWS), and
serves the API with uvicorn until SIGINT or SIGTERM, after which everything is stopped and it
returns normally.

Nothing accepted is lost when it is killed: the database and the local S3 objects are under the
data dir (``<data dir>/aws``), and at start the sweeper queues again what the lost in-memory
queues held (jobs pending or past their lease, webhooks never attempted, version checks), then
keeps sweeping on a timer.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shlex
import signal
import sys
import threading
import time
from pathlib import Path

import uvicorn

from functions.checks.app import handler as checks_handler
from functions.checks.dlq import handler as checks_dlq_handler
from functions.webhook.app import handler as webhook_handler
from functions.worker.app import handler as worker_handler
from functions.worker.dlq import handler as dlq_handler
from shared.adapters.aws import reset_clients
from shared.config import reset_settings
from shared.db.session import reset_engines
from shared.devstack.local_aws import (
    CHECKS_VISIBILITY_TIMEOUT,
    JOBS_VISIBILITY_TIMEOUT,
    WEBHOOKS_VISIBILITY_TIMEOUT,
    LocalAws,
    start_local_aws,
)
from shared.devstack.pollers import SqsPoller
from shared.devstack.sweeping import SweeperTimer

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


def _point_settings_at(aws: LocalAws, data_dir: Path) -> None:
    os.environ.update({
        "SHEETCALC_ENV": "dev",
        "SHEETCALC_DATA_DIR": str(data_dir),
        "SHEETCALC_AWS_ENDPOINT_URL": aws.endpoint_url,
        "SHEETCALC_AWS_REGION": aws.region,
        "SHEETCALC_BUCKET": aws.bucket,
        "SHEETCALC_JOBS_QUEUE_URL": aws.jobs_queue_url,
        "SHEETCALC_CHECKS_QUEUE_URL": aws.checks_queue_url,
        "SHEETCALC_WEBHOOKS_QUEUE_URL": aws.webhooks_queue_url,
    })
    reset_settings()
    reset_clients()
    reset_engines()


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


def _start_sweeper(queues_empty_since) -> SweeperTimer:
    from shared.config import get_settings

    timer = SweeperTimer(queues_empty_since=queues_empty_since, interval_seconds=get_settings().sweeper_interval_seconds)
    timer.start()
    return timer


def _start_pollers(aws: LocalAws) -> list[SqsPoller]:
    common = {"endpoint_url": aws.endpoint_url, "region": aws.region}
    pollers = [
        SqsPoller(aws.jobs_queue_url, worker_handler, function_name="sheetcalc-worker",
                  timeout_seconds=JOBS_VISIBILITY_TIMEOUT, **common),
        SqsPoller(aws.jobs_dlq_url, dlq_handler, function_name="sheetcalc-worker-dlq", **common),
        # As on AWS, one version check at a time, beside the jobs rather than in front of them.
        SqsPoller(aws.checks_queue_url, checks_handler, function_name="sheetcalc-checks", batch_size=1,
                  timeout_seconds=CHECKS_VISIBILITY_TIMEOUT, **common),
        SqsPoller(aws.checks_dlq_url, checks_dlq_handler, function_name="sheetcalc-checks-dlq", **common),
        SqsPoller(aws.webhooks_queue_url, webhook_handler, function_name="sheetcalc-webhook",
                  timeout_seconds=WEBHOOKS_VISIBILITY_TIMEOUT, **common),
    ]
    for poller in pollers:
        poller.start()
    return pollers


def _announce_when_started(server: uvicorn.Server, host: str, data_dir: Path) -> None:
    while not server.started:
        if server.should_exit:
            return
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]  # the real one, also for --port 0
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


def run_dev(host: str = "127.0.0.1", port: int = 8000, data_dir: Path = Path(".sheetcalc")) -> None:
    """Serve API, worker, webhook sender and local AWS on this machine until SIGINT/SIGTERM."""
    data_dir = Path(data_dir).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    load_dev_secrets(data_dir)

    server: uvicorn.Server | None = None
    stop_requested = threading.Event()

    def request_stop(_signum, _frame) -> None:
        # Installed for the whole run: uvicorn replaces it while serving and re-raises the
        # signal it caught once it has shut down, which then lands here harmlessly.
        stop_requested.set()
        if server is not None:
            server.should_exit = True

    previous: dict = {}
    if threading.current_thread() is threading.main_thread():
        previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    aws: LocalAws | None = None
    pollers: list[SqsPoller] = []
    sweeper: SweeperTimer | None = None
    try:
        from shared.db.types import utcnow

        queues_empty_since = utcnow()  # moto's queues begin empty: no message is older
        aws = start_local_aws(state_dir=data_dir / "aws")
        _point_settings_at(aws, data_dir)
        _log_library_lines()
        from shared.db.migrate import upgrade

        upgrade()
        pollers = _start_pollers(aws)
        sweeper = _start_sweeper(queues_empty_since)

        from shared.api.app import create_app

        # proxy_headers off: uvicorn would otherwise believe X-Forwarded-For from 127.0.0.1 and hand
        # the app a forged client address; only SHEETCALC_TRUSTED_PROXIES (shared/api/deps.py) decides.
        config = uvicorn.Config(
            create_app(), host=host, port=port, log_level="warning", access_log=False, proxy_headers=False
        )
        server = uvicorn.Server(config)
        if stop_requested.is_set():
            return
        threading.Thread(target=_announce_when_started, args=(server, host, data_dir), daemon=True).start()
        server.run()
    finally:
        if sweeper is not None:
            sweeper.stop()
        for poller in pollers:
            poller.stop(timeout=0)
        for poller in pollers:
            poller.stop()
        if aws is not None:
            aws.stop()
        reset_engines()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sys.stdout.flush()
