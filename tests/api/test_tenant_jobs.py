"""GET /tenant/jobs: the tenant's jobs across all its engines, as the console's Jobs page lists them,
filtered by status, engine or a search, paged, and never another tenant's."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from shared.db.models import Job
from shared.db.session import session_scope
from shared.repositories import jobs as job_repo
from tests.factories import make_admin

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def add_job(admin, *, engine: tuple[uuid.UUID, str, str], consumer: str | None, status: str, minute: int) -> str:
    """A job row of ``engine`` (id, name, slug) made by ``consumer`` (None: a test key), ``minute`` after T0."""
    created = T0 + timedelta(minutes=minute)
    with session_scope() as session:
        job = Job(
            tenant_id=uuid.UUID(admin.tenant_id), engine_id=engine[0], engine_name=engine[1], engine_slug=engine[2],
            version_id=uuid.uuid4(), version="1.0", consumer_id=uuid.uuid4() if consumer else None, consumer_name=consumer,
            is_test=consumer is None, status=status, inputs={"x": 1}, created_at=created, updated_at=created,
            outputs={"y": 2} if status == "completed" else None, completed_at=created if status == "completed" else None,
        )
        job_repo.add(session, job)
        return str(job.id)


LOAN = (uuid.uuid4(), "Loan quote", "loan-quote")
TAX = (uuid.uuid4(), "Tax table", "tax-2026")


def ids(answer) -> list[str]:
    return [j["job_id"] for j in answer.json()["jobs"]]


def test_the_jobs_of_every_engine_are_listed_newest_first_with_their_engine(client):
    # GIVEN a tenant with jobs on two engines
    admin = make_admin(client)
    first = add_job(admin, engine=LOAN, consumer="Pricing app", status="completed", minute=0)
    second = add_job(admin, engine=TAX, consumer="Payroll", status="failed", minute=1)
    third = add_job(admin, engine=LOAN, consumer=None, status="pending", minute=2)
    # WHEN its administrator lists the tenant's jobs
    r = admin.get("/tenant/jobs")
    # THEN all three come, newest first, each naming its engine
    assert r.status_code == 200, r.text
    body = r.json()
    assert ids(r) == [third, second, first] and (body["total"], body["limit"], body["offset"]) == (3, 50, 0)
    assert [(j["engine_id"], j["engine_name"], j["engine_slug"]) for j in body["jobs"]] == [
        (str(LOAN[0]), "Loan quote", "loan-quote"), (str(TAX[0]), "Tax table", "tax-2026"), (str(LOAN[0]), "Loan quote", "loan-quote")]
    assert body["jobs"][0]["is_test"] is True and body["jobs"][1]["consumer_name"] == "Payroll"


def test_status_engine_and_search_narrow_the_list_and_its_total(client):
    admin = make_admin(client)
    a = add_job(admin, engine=LOAN, consumer="Pricing app", status="completed", minute=0)
    b = add_job(admin, engine=TAX, consumer="Payroll", status="failed", minute=1)
    c = add_job(admin, engine=LOAN, consumer="Payroll", status="failed", minute=2)
    assert ids(admin.get("/tenant/jobs", params={"status": "failed"})) == [c, b]
    assert ids(admin.get("/tenant/jobs", params={"engine_id": str(LOAN[0])})) == [c, a]
    assert ids(admin.get("/tenant/jobs", params={"engine_id": str(LOAN[0]), "status": "failed"})) == [c]
    # The search matches part of an engine's name or slug, or of a consumer's name, whatever the case
    assert ids(admin.get("/tenant/jobs", params={"q": "PAYROLL"})) == [c, b]
    assert ids(admin.get("/tenant/jobs", params={"q": "tax-20"})) == [b]
    assert ids(admin.get("/tenant/jobs", params={"q": "quote"})) == [c, a]
    # or a job id, whole
    assert ids(admin.get("/tenant/jobs", params={"q": a})) == [a]
    # and % or _ are letters, not wildcards
    assert admin.get("/tenant/jobs", params={"q": "%"}).json()["total"] == 0
    assert admin.get("/tenant/jobs", params={"q": "_"}).json()["total"] == 0
    # The total counts the matches across pages
    page = admin.get("/tenant/jobs", params={"q": "payroll", "limit": 1, "offset": 1}).json()
    assert ([j["job_id"] for j in page["jobs"]], page["total"]) == ([b], 2)


def test_another_tenants_jobs_are_not_listed_nor_found_by_id(client):
    mine, theirs = make_admin(client), make_admin(client)
    kept = add_job(mine, engine=LOAN, consumer="Pricing app", status="completed", minute=0)
    hidden = add_job(theirs, engine=LOAN, consumer="Pricing app", status="completed", minute=1)
    assert ids(mine.get("/tenant/jobs")) == [kept]
    assert ids(mine.get("/tenant/jobs", params={"q": hidden})) == []


def test_the_list_needs_an_administrators_session_and_refuses_a_bad_filter(client):
    admin = make_admin(client)
    assert client.get("/tenant/jobs").status_code == 401
    assert admin.get("/tenant/jobs", params={"status": "lost"}).status_code == 422
    assert admin.get("/tenant/jobs", params={"engine_id": "not-an-id"}).status_code == 422
    assert admin.get("/tenant/jobs", params={"q": "x" * 256}).status_code == 422
