"""Rows for tests, made through the services the product itself uses (no HTTP).

Each factory opens its own unit of work with ``session_scope()``: inside a test that runs in a
savepoint (tests/conftest.py), that is a savepoint of the test's transaction, undone after it.
Tests of the HTTP layer still send the request they are about over HTTP; only their set-up
comes from here.
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass

from shared.db.session import session_scope
from shared.repositories import tenants as tenant_repo
from shared.security import hash_password
from shared.services import auth, batches, consumers, engines, jobs, tenants, versions
from shared.services.callers import ConsumerRequest

DEFAULT_PASSWORD = "correct horse battery"
ALL_PERMISSIONS = {"can_execute": True, "can_view_jobs": True, "can_download": True, "can_view_about": True}


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


def create_tenant(slug: str | None = None) -> dict:
    """A new tenant through the same service the create-tenant command uses; its administrator
    still has the temporary password."""
    slug = slug or f"t-{uuid.uuid4().hex[:10]}"
    with session_scope() as session:
        created = tenants.create_tenant(session, slug=slug, name=f"Tenant {slug}", admin_email=f"admin@{slug}.example.com")
        return {"tenant_id": str(created.tenant.id), "slug": slug, "email": created.admin.email, "password": created.temporary_password}


@functools.cache
def password_hash(password: str) -> str:
    """One scrypt hash per password and test run (a salted hash fits every user)."""
    return hash_password(password)


def sign_in(client, tenant: dict, new_password: str = DEFAULT_PASSWORD) -> Admin:
    """The tenant's administrator as change-password and a second login leave them: their own
    password set and a live session, through the login service (one scrypt, not five)."""
    with session_scope() as session:
        user = tenant_repo.get_user_by_email(session, email=tenant["email"])
        user.password_hash = password_hash(new_password)
        user.must_change_password = False
        user.session_token_hash = None
        token = auth.login(session, email=tenant["email"], password=new_password).token
    return Admin(client, tenant["tenant_id"], tenant["slug"], tenant["email"], new_password, token)


def make_admin(client) -> Admin:
    """A new tenant and its ready administrator."""
    return sign_in(client, create_tenant())


def deploy_loan(admin: Admin, loan_xlsx: bytes, *, flags: dict | None = None, activate: bool = True) -> Deployed:
    """The loan workbook as version 1.0 of a new engine (active unless told), and a consumer
    granted ``flags`` (every permission by default)."""
    tenant_id = uuid.UUID(admin.tenant_id)
    with session_scope() as session:
        tenant = tenant_repo.get_tenant(session, tenant_id=tenant_id)
        engine = engines.create(session, tenant_id=tenant_id, name="Loan quote", slug=None, description=None).engine
        uploaded = versions.upload(session, tenant=tenant, engine_id=engine.id, version="1.0", filename="loan-quote.xlsx", data=loan_xlsx)
        if activate:
            versions.activate(session, tenant_id=tenant_id, engine_id=engine.id, version_id=uploaded.version.id)
        consumer = consumers.create(session, tenant=tenant, name="Pricing app")
        consumers.grant(session, tenant_id=tenant_id, engine_id=engine.id, consumer_id=consumer.consumer.id, **(flags or ALL_PERMISSIONS))
        return Deployed(
            admin, str(engine.id), engine.slug, str(uploaded.version.id), uploaded.test_api_key,
            str(consumer.consumer.id), consumer.api_key,
        )


def store_schema_unchecked(deployed: Deployed, *, input_schema: dict) -> None:
    """Write an input schema straight into the version's row, as one saved before today's
    schema rules would still be stored (no check runs)."""
    from shared.repositories import engines as engine_repo

    with session_scope() as session:
        version = engine_repo.get_version(session, tenant_id=uuid.UUID(deployed.admin.tenant_id), version_id=uuid.UUID(deployed.version_id))
        version.input_schema = input_schema


def submit_job(deployed: Deployed, inputs: dict, *, webhook_url: str | None = None) -> str:
    """A job queued on the deployed engine by its consumer, through the execute service; its id."""
    with session_scope() as session:
        job = jobs.execute(
            session, request=ConsumerRequest(api_key=deployed.api_key, client_ip="127.0.0.1"),
            tenant_slug=deployed.admin.slug, engine_slug=deployed.engine_slug, inputs=inputs, webhook_url=webhook_url,
        )
        return str(job.id)


def worked_job(client, deployed: Deployed, inputs: dict, run_worker) -> dict:
    """A job queued on the deployed engine (``submit_job``), run by the worker, and read as its
    consumer reads it (``GET /jobs/{id}``)."""
    job_id = submit_job(deployed, inputs)
    run_worker()
    return client.get(f"/jobs/{job_id}", headers={"X-API-Key": deployed.api_key}).json()


def submit_batch(deployed: Deployed, input_sets: list) -> str:
    """A batch sent on the deployed engine by its consumer, through the batch service; its id."""
    with session_scope() as session:
        progress = batches.create(
            session, request=ConsumerRequest(api_key=deployed.api_key, client_ip="127.0.0.1"),
            tenant_slug=deployed.admin.slug, engine_slug=deployed.engine_slug, input_sets=input_sets,
        )
        return str(progress.batch.id)
