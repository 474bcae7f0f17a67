"""Shared fixtures: a real database (SQLite, or PostgreSQL when SHEETCALC_TEST_DATABASE_URL is
set), a real moto server for S3 and SQS, the API over HTTP, and the real Lambda handlers fed
from the real queues.
"""

from __future__ import annotations

import os
import secrets
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LOAN_XLSX = REPO / "examples" / "loan-quote.xlsx"


@pytest.fixture(scope="session", autouse=True)
def local_aws(tmp_path_factory):
    """Point the whole process at a fresh database and a moto server, migrated and ready."""
    from shared.devstack.local_aws import start_local_aws

    db_url = os.environ.get("SHEETCALC_TEST_DATABASE_URL") or f"sqlite:///{tmp_path_factory.mktemp('db') / 'test.db'}"
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
        SHEETCALC_CHECKS_QUEUE_URL=aws.checks_queue_url,
        SHEETCALC_WEBHOOKS_QUEUE_URL=aws.webhooks_queue_url,
    )
    from shared.adapters.aws import reset_clients
    from shared.config import reset_settings
    from shared.db.migrate import upgrade
    from shared.db.session import reset_engines

    reset_settings()
    reset_clients()
    reset_engines()
    upgrade()
    yield aws
    reset_engines()
    aws.stop()


@pytest.fixture(scope="session")
def app():
    from shared.api.app import create_app

    return create_app()


@pytest.fixture()
def client(app):
    from fastapi.testclient import TestClient

    with TestClient(app) as c:
        yield c


@pytest.fixture(scope="session")
def loan_xlsx() -> bytes:
    return LOAN_XLSX.read_bytes()


@dataclass
class Admin:
    """A logged-in tenant administrator, with a TestClient that sends their token."""

    client: object
    tenant_id: str
    slug: str
    email: str
    password: str
    token: str

    @property
    def headers(self) -> dict:
        return {"Authorization": f"Bearer {self.token}"}

    def get(self, path, **kw):
        return self.client.get(path, headers={**self.headers, **kw.pop("headers", {})}, **kw)

    def post(self, path, **kw):
        return self.client.post(path, headers={**self.headers, **kw.pop("headers", {})}, **kw)

    def put(self, path, **kw):
        return self.client.put(path, headers={**self.headers, **kw.pop("headers", {})}, **kw)

    def patch(self, path, **kw):
        return self.client.patch(path, headers={**self.headers, **kw.pop("headers", {})}, **kw)

    def delete(self, path, **kw):
        return self.client.delete(path, headers={**self.headers, **kw.pop("headers", {})}, **kw)


def create_tenant(slug: str | None = None) -> dict:
    """A new tenant through the same service the create-tenant command uses."""
    from shared.db.session import session_scope
    from shared.services.tenants import create_tenant as create

    slug = slug or f"t-{uuid.uuid4().hex[:10]}"
    with session_scope() as session:
        created = create(session, slug=slug, name=f"Tenant {slug}", admin_email=f"admin@{slug}.example.com")
        return {"tenant_id": str(created.tenant.id), "slug": slug, "email": created.admin.email, "password": created.temporary_password}


def login_admin(client, tenant: dict, new_password: str = "correct horse battery") -> Admin:
    """Log in, change the temporary password, log in again: a ready administrator."""
    token = client.post("/auth/login", json={"email": tenant["email"], "password": tenant["password"]}).json()["access_token"]
    r = client.post(
        "/auth/change-password",
        json={"current_password": tenant["password"], "new_password": new_password},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert r.status_code == 200, r.text
    token = client.post("/auth/login", json={"email": tenant["email"], "password": new_password}).json()["access_token"]
    client.cookies.clear()
    return Admin(client, tenant["tenant_id"], tenant["slug"], tenant["email"], new_password, token)


@pytest.fixture()
def admin(client) -> Admin:
    return login_admin(client, create_tenant())


@dataclass
class Deployed:
    """An engine with the loan workbook active, and a consumer allowed everything."""

    admin: Admin
    engine_id: str
    engine_slug: str
    version_id: str
    test_key: str
    consumer_id: str
    api_key: str

    @property
    def execute_path(self) -> str:
        return f"/jobs/execute/{self.admin.slug}/{self.engine_slug}"


def deploy_loan(admin: Admin, loan_xlsx: bytes, *, flags: dict | None = None, activate: bool = True) -> Deployed:
    engine = admin.post("/engines", json={"name": "Loan quote"}).json()
    up = admin.post(
        f"/engines/{engine['id']}/versions",
        data={"version": "1.0"},
        files={"file": ("loan-quote.xlsx", loan_xlsx, "application/octet-stream")},
    )
    assert up.status_code == 201, up.text
    version = up.json()
    if activate:
        assert admin.post(f"/engines/{engine['id']}/versions/{version['id']}/activate").status_code == 200
    consumer = admin.post("/consumers", json={"name": "Pricing app"}).json()
    grant = flags or {"can_execute": True, "can_view_jobs": True, "can_download": True, "can_view_about": True}
    r = admin.put(f"/engines/{engine['id']}/access/{consumer['id']}", json=grant)
    assert r.status_code == 200, r.text
    return Deployed(admin, engine["id"], engine["slug"], version["id"], version["test_api_key"], consumer["id"], consumer["api_key"])


@pytest.fixture()
def deployed(admin, loan_xlsx) -> Deployed:
    return deploy_loan(admin, loan_xlsx)


def drain(queue_url: str, handler, *, max_batches: int = 20) -> int:
    """Feed every message now on ``queue_url`` to ``handler`` as Lambda would; returns how many."""
    from shared.devstack.pollers import SqsPoller

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

    return lambda: drain(local_aws.jobs_queue_url, handler)


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
def _queues_left_empty(local_aws, run_worker, run_checks, run_webhooks):
    """Messages a test queued but did not process are processed after it, so the next starts clean."""
    yield
    from shared.adapters.aws import client

    for url, drain in ((local_aws.jobs_queue_url, run_worker), (local_aws.checks_queue_url, run_checks), (local_aws.webhooks_queue_url, run_webhooks)):
        waiting = client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
        if int(waiting["Attributes"]["ApproximateNumberOfMessages"]):
            drain()
