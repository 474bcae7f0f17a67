"""Shared fixtures: a real database (SQLite, or PostgreSQL when SHEETCALC_TEST_DATABASE_URL is
set), a real moto server for S3 and SQS, the API over HTTP, and the real Lambda handlers fed
from the real queues.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, create_engine, event

from shared.adapters import aws as aws_clients
from shared.adapters.aws import reset_clients
from shared.api.app import create_app
from shared.config import reset_settings
from shared.db import pg8000_prepared
from shared.db.migrate import upgrade
from shared.db.session import bind_sessions, reset_engines
from shared.devstack.local_aws import start_local_aws
from shared.devstack.pollers import SqsPoller
from shared.services import rate_limits
from tests.factories import Admin, Deployed, create_tenant, deploy_loan, make_admin, sign_in

REPO = Path(__file__).resolve().parent.parent
LOAN_XLSX = REPO / "examples" / "loan-quote.xlsx"


@pytest.fixture(scope="session", autouse=True)
def local_aws(tmp_path_factory):
    """Point the whole process at a fresh database and a moto server, migrated and ready."""
    db_url = os.environ.get("SHEETCALC_TEST_DATABASE_URL") or f"sqlite:///{tmp_path_factory.mktemp('db') / 'test.db'}"
    # The queues are purged after each test that leaves a message on them (_queues_left_empty);
    # moto would otherwise refuse a second purge of a queue within 60 s, as SQS does.
    os.environ["MOTO_SQS_ENFORCE_STRICT_QUEUE_PURGE_BEHAVIOUR"] = "false"
    aws = start_local_aws()
    os.environ.update(
        DATABASE_URL=db_url,
        SHEETCALC_ENV="dev",
        SHEETCALC_DATA_DIR=str(tmp_path_factory.mktemp("data")),
        SHEETCALC_JWT_SECRET=secrets.token_hex(32),
        SHEETCALC_ENCRYPTION_KEY=secrets.token_hex(32),
        SHEETCALC_AWS_ENDPOINT_URL=aws.endpoint_url,
        SHEETCALC_AWS_REGION=aws.region,
        SHEETCALC_BUCKET=aws.bucket,
        SHEETCALC_JOBS_QUEUE_URL=aws.jobs_queue_url,
        SHEETCALC_SLOW_JOBS_QUEUE_URL=aws.slow_jobs_queue_url,
        SHEETCALC_CHECKS_QUEUE_URL=aws.checks_queue_url,
        SHEETCALC_WEBHOOKS_QUEUE_URL=aws.webhooks_queue_url,
        # The upload reader's deadline (25 s in production) is generous here: CI at load 15 once
        # took longer than 25 s to read a small workbook. Tests of the deadline set their own.
        SHEETCALC_UPLOAD_PARSE_TIMEOUT_SECONDS="300",
        # A worker's batch of one tenant's jobs is claimed whole here; the per-tenant cap on jobs
        # processing has tests of its own (tests/worker/test_fair_claims.py), which set it.
        SHEETCALC_TENANT_MAX_CONCURRENT_JOBS="0",
    )
    reset_settings()
    reset_clients()
    reset_engines()
    upgrade()
    yield aws
    reset_engines()
    aws.stop()


@pytest.fixture(scope="session")
def app():
    return create_app()


@pytest.fixture()
def client(app):
    with TestClient(app) as c:
        yield c


@pytest.fixture(scope="session")
def loan_xlsx() -> bytes:
    return LOAN_XLSX.read_bytes()


@pytest.fixture(scope="session")
def _test_database(local_aws) -> Engine:
    """The engine the tests' transactions run on (the app's sessions join them, see ``db``).

    pysqlite neither sends BEGIN itself in a way savepoints survive nor keeps a transaction
    open across SAVEPOINT/RELEASE, so on SQLite the driver's own transaction handling is
    switched off and BEGIN is sent explicitly (SQLAlchemy's documented recipe).
    """
    url = os.environ["DATABASE_URL"]
    if not url.startswith("sqlite"):
        engine = create_engine(url.replace("postgresql://", "postgresql+pg8000://", 1))
        pg8000_prepared.install(engine)  # as the product's engine runs its statements (shared/db/session.py)
    else:
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _connect(dbapi_conn, _record):
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        @event.listens_for(engine, "begin")
        def _begin(conn):
            conn.exec_driver_sql("BEGIN")

    yield engine
    engine.dispose()


@pytest.fixture(autouse=True)
def db(request, _test_database):
    """A savepoint per test: every session the test and the app open joins one transaction,
    rolled back after the test. Tests marked ``own_transactions`` commit for real instead."""
    # Requests of a key reserved in memory refer to counter rows the rollback takes away.
    rate_limits.forget_leases()
    if request.node.get_closest_marker("own_transactions"):
        yield None
        return
    connection = _test_database.connect()
    transaction = connection.begin()
    try:
        with bind_sessions(connection):
            yield connection
    finally:
        transaction.rollback()
        connection.close()


def pytest_collection_modifyitems(items):
    # The dev stack is another process on the same database: nothing of ours may hold it.
    for item in items:
        if item.get_closest_marker("e2e"):
            item.add_marker(pytest.mark.own_transactions)


@pytest.fixture(scope="session")
def _base_admin(local_aws) -> Admin:
    """One tenant for the whole run, committed before any test; each test's changes to it are
    rolled back with the test's savepoint."""
    return sign_in(None, create_tenant())


@pytest.fixture()
def admin(request, client, _base_admin) -> Admin:
    """A ready administrator: of the run's tenant, or of a new one for ``own_transactions`` tests."""
    if request.node.get_closest_marker("own_transactions"):
        return make_admin(client)
    return dataclasses.replace(_base_admin, client=client)


@pytest.fixture()
def deployed(admin, loan_xlsx) -> Deployed:
    return deploy_loan(admin, loan_xlsx)


def drain(queue_url: str, handler, *, max_batches: int = 20) -> int:
    """Feed every message now on ``queue_url`` to ``handler`` as Lambda would; returns how many."""
    poller = SqsPoller(queue_url, handler, function_name="test", endpoint_url=os.environ["SHEETCALC_AWS_ENDPOINT_URL"], region=os.environ["SHEETCALC_AWS_REGION"])
    seen = 0
    for _ in range(max_batches):
        messages = poller.receive(wait_time_seconds=0)
        if not messages:
            break
        poller.deliver(messages)
        seen += len(messages)
    return seen


@pytest.fixture()
def run_worker(local_aws):
    """Process every queued job with the real worker handler."""
    from functions.worker.app import handler

    # both lanes' queues: the slow lane's takes the jobs of versions over the slow-lane threshold
    return lambda: drain(local_aws.jobs_queue_url, handler) + drain(local_aws.slow_jobs_queue_url, handler)


@pytest.fixture()
def run_checks(local_aws):
    """Run every queued version check with the real checks handler."""
    from functions.checks.app import handler

    return lambda: drain(local_aws.checks_queue_url, handler)


@pytest.fixture()
def run_webhooks(local_aws):
    """Deliver every queued webhook with the real webhook handler."""
    from functions.webhook.app import handler

    return lambda: drain(local_aws.webhooks_queue_url, handler)


@pytest.fixture(autouse=True)
def _queues_left_empty(local_aws, db, run_worker, run_checks, run_webhooks):
    """Messages a test queued but did not process are processed after it; whatever is still on
    a queue then (a message in flight, one the test received itself, one queued with a delay) is
    purged, or it would come back in a later test once its visibility timeout or delay passed."""
    yield
    sqs = aws_clients.client("sqs")
    counts = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"]

    def held(url: str) -> list[int]:
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=counts)["Attributes"]
        return [int(attributes[name]) for name in counts]

    for urls, drain in (((local_aws.jobs_queue_url, local_aws.slow_jobs_queue_url), run_worker),
                        ((local_aws.checks_queue_url,), run_checks), ((local_aws.webhooks_queue_url,), run_webhooks)):
        if any(held(url)[0] for url in urls):
            drain()
    for url in (local_aws.jobs_queue_url, local_aws.slow_jobs_queue_url, local_aws.checks_queue_url, local_aws.webhooks_queue_url):
        if any(held(url)):
            sqs.purge_queue(QueueUrl=url)


@pytest.fixture()
def configure(monkeypatch):
    """``configure(name=value, ...)`` sets SHEETCALC_<NAME> settings for one test; undone after."""

    def set_(**values) -> None:
        for name, value in values.items():
            monkeypatch.setenv(f"SHEETCALC_{name.upper()}", str(value))
        reset_settings()

    yield set_
    monkeypatch.undo()
    reset_settings()
