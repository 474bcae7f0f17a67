"""Managing engines and versions: settings and IP whitelist, deletion, version deletion, activation."""

from __future__ import annotations

import os
import threading
import uuid

import pytest
from sqlalchemy import select

from shared.adapters import aws
from shared.config import get_settings
from shared.db.models import EngineVersion, Job
from shared.db.session import get_engine, new_session, session_scope
from shared.errors import SheetcalcError
from shared.services import versions
from tests.factories import deploy_loan

INPUTS = {"principal": 100000, "annual_rate": 0.05, "years": 10}


def stored_keys(prefix: str) -> list[str]:
    pages = aws.client("s3").get_paginator("list_objects_v2").paginate(Bucket=get_settings().bucket, Prefix=prefix)
    return [obj["Key"] for page in pages for obj in page.get("Contents", [])]


def engine_prefix(d) -> str:
    return f"tenants/{d.admin.tenant_id}/engines/{d.engine_id}/"


def upload(admin, engine_id, version, loan_xlsx):
    r = admin.post(f"/engines/{engine_id}/versions", data={"version": version}, files={"file": ("loan.xlsx", loan_xlsx)})
    assert r.status_code == 201, r.text
    return r.json()


# ----------------------------------------------------------------------------- PATCH /engines/{id}


def test_patch_changes_only_the_named_settings_and_answers_the_detail(admin):
    # GIVEN an engine with a description
    engine = admin.post("/engines", json={"name": "Pricing", "description": "EU prices"}).json()
    # WHEN the administrator renames it and turns on a whitelist
    r = admin.patch(
        f"/engines/{engine['id']}",
        json={"name": "Pricing EU", "ip_whitelist_enabled": True, "ip_whitelist": ["203.0.113.7", "10.1.2.3/8", "2001:DB8::/32"]},
    )
    # THEN the answer is the engine detail with the new settings, entries in canonical form
    assert r.status_code == 200, r.text
    detail = r.json()
    assert detail["name"] == "Pricing EU" and detail["description"] == "EU prices" and detail["slug"] == engine["slug"]
    assert detail["ip_whitelist_enabled"] is True
    assert detail["ip_whitelist"] == ["203.0.113.7", "10.0.0.0/8", "2001:db8::/32"]
    assert set(detail) == {
        "id", "name", "slug", "description", "active_version_id", "ip_whitelist_enabled", "ip_whitelist", "versions", "consumers", "created_at",
    }
    # AND the engine reads back the same, in the list too
    assert admin.get(f"/engines/{engine['id']}").json() == detail
    assert admin.get("/engines").json()[0]["ip_whitelist_enabled"] is True


def test_patch_null_description_clears_it_and_duplicates_are_dropped(admin):
    engine = admin.post("/engines", json={"name": "E", "description": "old"}).json()
    r = admin.patch(f"/engines/{engine['id']}", json={"description": None, "ip_whitelist": ["::ffff:192.0.2.1", "192.0.2.1", " 192.0.2.1 "]})
    assert r.status_code == 200
    assert r.json()["description"] is None
    assert r.json()["ip_whitelist"] == ["192.0.2.1"]
    # null empties the list; the switch stays off
    r = admin.patch(f"/engines/{engine['id']}", json={"ip_whitelist": None})
    assert r.json()["ip_whitelist"] == [] and r.json()["ip_whitelist_enabled"] is False


@pytest.mark.parametrize("entry", ["10.0.0.300", "not-an-ip", "10.0.0.0/33", "2001:db8::/129", "", "10.0.0.0/8/8"])
def test_patch_with_a_bad_whitelist_entry_is_422_and_changes_nothing(admin, entry):
    engine = admin.post("/engines", json={"name": "E"}).json()
    r = admin.patch(f"/engines/{engine['id']}", json={"name": "Renamed", "ip_whitelist_enabled": True, "ip_whitelist": ["192.0.2.1", entry]})
    assert r.status_code == 422
    [issue] = r.json()["detail"]
    assert issue["loc"] == ["body", "ip_whitelist"]
    assert f"'{entry}' is not an IP address or CIDR range" in issue["msg"]
    after = admin.get(f"/engines/{engine['id']}").json()
    assert (after["name"], after["ip_whitelist_enabled"], after["ip_whitelist"]) == ("E", False, [])


@pytest.mark.parametrize(
    "body",
    [{"name": ""}, {"name": None}, {"name": "x" * 256}, {"slug": "Bad Slug"}, {"slug": None}, {"ip_whitelist_enabled": None},
     {"ip_whitelist": "10.0.0.0/8"}, {"ip_whitelist_enabled": "sometimes"}],
)
def test_patch_with_invalid_values_is_422(admin, body):
    engine = admin.post("/engines", json={"name": "E"}).json()
    r = admin.patch(f"/engines/{engine['id']}", json=body)
    assert r.status_code == 422
    assert isinstance(r.json()["detail"], list) and r.json()["detail"]


def test_patch_unknown_engine_is_404(admin):
    r = admin.patch(f"/engines/{uuid.uuid4()}", json={"name": "x"})
    assert (r.status_code, r.json()) == (404, {"detail": "Engine not found"})
    assert admin.patch("/engines/not-a-uuid", json={"name": "x"}).status_code == 422


def test_patch_slug_moves_the_consumer_url_and_a_taken_slug_is_409(client, admin, loan_xlsx):
    # GIVEN a deployed engine and another engine of the tenant
    d = deploy_loan(admin, loan_xlsx)
    admin.post("/engines", json={"name": "Other", "slug": "taken"})
    # WHEN the slug is changed to one already in use THEN it is refused and nothing changes
    r = admin.patch(f"/engines/{d.engine_id}", json={"slug": "taken", "name": "New name"})
    assert (r.status_code, r.json()) == (409, {"detail": "An engine with slug 'taken' already exists"})
    assert admin.get(f"/engines/{d.engine_id}").json()["name"] == "Loan quote"
    # WHEN it is set to its own slug THEN that is fine
    assert admin.patch(f"/engines/{d.engine_id}", json={"slug": d.engine_slug}).status_code == 200
    # WHEN it is changed to a free slug THEN consumers call it there, and the old URL is gone
    assert admin.patch(f"/engines/{d.engine_id}", json={"slug": "loans-v2"}).json()["slug"] == "loans-v2"
    r = client.post(f"/jobs/execute/{admin.slug}/loans-v2", json={"inputs": INPUTS}, headers={"X-API-Key": d.api_key})
    assert r.status_code == 202
    r = client.post(d.execute_path, json={"inputs": INPUTS}, headers={"X-API-Key": d.api_key})
    assert (r.status_code, r.json()) == (404, {"detail": f"Engine '{d.engine_slug}' not found"})


# ----------------------------------------------------------------------------- DELETE /engines/{id}


def test_delete_engine_removes_versions_access_and_files_but_keeps_jobs(client, admin, loan_xlsx, run_worker):
    # GIVEN a deployed engine with a second version, one finished job and one still queued
    d = deploy_loan(admin, loan_xlsx)
    upload(admin, d.engine_id, "2.0", loan_xlsx)
    done = client.post(d.execute_path, json={"inputs": INPUTS}, headers={"X-API-Key": d.api_key}).json()["job_id"]
    run_worker()
    queued = client.post(d.execute_path, json={"inputs": INPUTS}, headers={"X-API-Key": d.api_key}).json()["job_id"]
    assert len(stored_keys(engine_prefix(d))) == 4  # two workbooks, two prepared models
    client.get(f"/jobs/{done}/download", headers={"X-API-Key": d.api_key})  # its filled workbook, stored on first download
    result_key = f"results/{d.admin.tenant_id}/{done}.xlsx"
    assert stored_keys(result_key) == [result_key]

    # WHEN the engine is deleted
    r = admin.delete(f"/engines/{d.engine_id}")

    # THEN it answers with a message and the engine is gone everywhere
    assert (r.status_code, r.json()) == (200, {"message": "Engine 'Loan quote' deleted"})
    assert admin.get(f"/engines/{d.engine_id}").json() == {"detail": "Engine not found"}
    assert admin.get("/engines").json() == []
    assert admin.get(f"/consumers/{d.consumer_id}/access").json() == []
    # AND its stored workbooks are removed, while job results are kept
    assert stored_keys(engine_prefix(d)) == []
    assert stored_keys(result_key) == [result_key]
    # AND consumers and test keys can no longer reach it
    r = client.post(d.execute_path, json={"inputs": INPUTS}, headers={"X-API-Key": d.api_key})
    assert (r.status_code, r.json()) == (404, {"detail": f"Engine '{d.engine_slug}' not found"})
    r = client.post(f"/jobs/test/{admin.slug}/{d.engine_slug}/{d.version_id}", json={"inputs": INPUTS}, headers={"X-API-Key": d.test_key})
    assert (r.status_code, r.json()) == (401, {"detail": "Invalid API key"})
    # AND the consumer itself is untouched
    assert [c["id"] for c in admin.get("/consumers").json()] == [d.consumer_id]
    # AND the job history stays (for statistics); the queued job ends failed with a generic message
    run_worker()
    with session_scope() as session:
        jobs = {str(j.id): j for j in session.scalars(select(Job).where(Job.engine_id == uuid.UUID(d.engine_id)))}
        assert set(jobs) == {done, queued}
        assert jobs[done].status == "completed" and jobs[done].engine_name == "Loan quote"
        assert (jobs[queued].status, jobs[queued].error_message) == ("failed", "The engine version for this job is no longer available")
    # AND deleting it again is 404, while its slug is free for a new engine
    assert admin.delete(f"/engines/{d.engine_id}").json() == {"detail": "Engine not found"}
    assert admin.post("/engines", json={"name": "Again", "slug": d.engine_slug}).status_code == 201


def test_delete_unknown_engine_is_404(admin):
    r = admin.delete(f"/engines/{uuid.uuid4()}")
    assert (r.status_code, r.json()) == (404, {"detail": "Engine not found"})


# ----------------------------------------------------------------------------- versions


def test_the_active_version_cannot_be_deleted(admin, deployed):
    r = admin.delete(f"/engines/{deployed.engine_id}/versions/{deployed.version_id}")
    assert (r.status_code, r.json()) == (409, {"detail": "Cannot delete the active version; activate another version first"})
    assert [v["id"] for v in admin.get(f"/engines/{deployed.engine_id}").json()["versions"]] == [deployed.version_id]


def test_delete_inactive_version_removes_it_and_its_files(client, admin, deployed, loan_xlsx, run_worker):
    # GIVEN a second, inactive version that ran a test job
    v2 = upload(admin, deployed.engine_id, "2.0", loan_xlsx)
    job = client.post(
        f"/jobs/test/{admin.slug}/{deployed.engine_slug}/{v2['id']}", json={"inputs": INPUTS}, headers={"X-API-Key": v2["test_api_key"]}
    ).json()["job_id"]
    run_worker()
    prefix = f"{engine_prefix(deployed)}versions/{v2['id']}/"
    assert len(stored_keys(prefix)) == 2
    # WHEN it is deleted
    r = admin.delete(f"/engines/{deployed.engine_id}/versions/{v2['id']}")
    # THEN it says which version went, and the version, its files and its test key are gone
    assert (r.status_code, r.json()) == (200, {"id": v2["id"], "version": "2.0", "message": "Version '2.0' deleted"})
    assert [v["version"] for v in admin.get(f"/engines/{deployed.engine_id}").json()["versions"]] == ["1.0"]
    assert stored_keys(prefix) == []
    assert len(stored_keys(engine_prefix(deployed))) == 2  # the active version's files stay
    r = client.get(f"/jobs/{job}", headers={"X-API-Key": v2["test_api_key"]})
    assert (r.status_code, r.json()) == (401, {"detail": "Invalid API key"})
    # AND its job stays in the history
    with session_scope() as session:
        assert session.get(Job, uuid.UUID(job)).version == "2.0"
    # AND the version string can be used again; deleting it twice is 404
    assert admin.delete(f"/engines/{deployed.engine_id}/versions/{v2['id']}").json() == {"detail": "Engine version not found"}
    assert upload(admin, deployed.engine_id, "2.0", loan_xlsx)["version"] == "2.0"
    # AND the active version still calculates
    assert client.post(deployed.execute_path, json={"inputs": INPUTS}, headers={"X-API-Key": deployed.api_key}).status_code == 202


def test_delete_version_through_the_wrong_engine_or_unknown_is_404(admin, deployed):
    other = admin.post("/engines", json={"name": "Other"}).json()
    r = admin.delete(f"/engines/{other['id']}/versions/{deployed.version_id}")
    assert (r.status_code, r.json()) == (404, {"detail": "Engine version not found"})
    r = admin.delete(f"/engines/{deployed.engine_id}/versions/{uuid.uuid4()}")
    assert (r.status_code, r.json()) == (404, {"detail": "Engine version not found"})
    r = admin.delete(f"/engines/{uuid.uuid4()}/versions/{deployed.version_id}")
    assert (r.status_code, r.json()) == (404, {"detail": "Engine not found"})


def test_engine_detail_shows_every_version_in_full(admin, deployed, loan_xlsx):
    upload(admin, deployed.engine_id, "2.0", loan_xlsx)
    versions = admin.get(f"/engines/{deployed.engine_id}").json()["versions"]
    assert [(v["version"], v["is_active"]) for v in versions] == [("1.0", True), ("2.0", False)]
    assert set(versions[0]) >= {
        "id", "version", "filename", "is_active", "created_at", "updated_at", "file_size", "calc_engine", "named_ranges",
        "input_schema", "output_schema",
    }
    assert versions[0]["filename"] == "loan-quote.xlsx" and versions[0]["file_size"] > 0
    assert {r["name"] for r in versions[0]["named_ranges"]} >= {"principal", "monthly_payment"}


def test_activate_unknown_version_is_404_and_keeps_the_active_one(admin, deployed):
    r = admin.post(f"/engines/{deployed.engine_id}/versions/{uuid.uuid4()}/activate")
    assert (r.status_code, r.json()) == (404, {"detail": "Engine version not found"})
    assert admin.get(f"/engines/{deployed.engine_id}").json()["active_version_id"] == deployed.version_id


def test_schema_patch_refuses_invalid_draft7_with_a_message(admin, deployed):
    path = f"/engines/{deployed.engine_id}/versions/{deployed.version_id}"
    r = admin.patch(path, json={"output_schema": {"type": "object", "required": "monthly_payment"}})
    assert r.status_code == 422
    assert r.json()["detail"].startswith("output_schema is not a valid JSON Schema (Draft 7): ")
    assert admin.get(f"/engines/{deployed.engine_id}").json()["versions"][0]["output_schema"] is None
    # a schema that is not an object at all is a request validation error
    assert admin.patch(path, json={"input_schema": [1, 2]}).status_code == 422
    r = admin.patch(f"/engines/{deployed.engine_id}/versions/{uuid.uuid4()}", json={"input_schema": None})
    assert (r.status_code, r.json()) == (404, {"detail": "Engine version not found"})


def test_schema_patch_warnings_name_both_directions_and_null_removes(admin, deployed):
    path = f"/engines/{deployed.engine_id}/versions/{deployed.version_id}"
    out = {"type": "object", "properties": {"monthly_payment": {"type": "number"}, "apr": {"type": "number"}}}
    r = admin.patch(path, json={"output_schema": out})
    assert r.status_code == 200
    warnings = r.json()["warnings"]
    assert "output_schema property 'apr' has no matching named range in the workbook" in warnings
    assert "Named range 'principal' (input) is not mentioned in any schema" in warnings
    assert not any("monthly_payment" in w for w in warnings)
    r = admin.patch(path, json={"output_schema": None})
    assert r.json()["output_schema"] is None and r.json()["warnings"] == []


# ----------------------------------------------------------------------------- concurrency (PostgreSQL)

on_postgresql = pytest.mark.skipif(
    not os.environ.get("SHEETCALC_TEST_DATABASE_URL", "").startswith("postgres"),
    reason="row locks need PostgreSQL; SQLite serialises every writer anyway",
)


def _extra_versions(deployed, count: int) -> list[uuid.UUID]:
    """Version rows for the deployed engine (no stored files: activation and deletion do not read them)."""
    ids = []
    with session_scope() as session:
        template = session.get(EngineVersion, uuid.UUID(deployed.version_id))
        for _ in range(count):
            row = EngineVersion(
                tenant_id=template.tenant_id, engine_id=template.engine_id, version=f"r-{uuid.uuid4().hex[:8]}",
                filename=template.filename, file_size=template.file_size, workbook_key=template.workbook_key,
                calc_engine=template.calc_engine, named_ranges=template.named_ranges, test_key_hash=uuid.uuid4().hex,
            )
            session.add(row)
            session.flush()
            ids.append(row.id)
    return ids


def _race(*calls):
    """Run the calls at the same moment, each in its own thread and session; returns each one's outcome."""
    barrier = threading.Barrier(len(calls))
    outcomes: list = [None] * len(calls)

    def run(i, call):
        session = new_session()
        try:
            barrier.wait()
            call(session)
            session.commit()
            outcomes[i] = "ok"
        except SheetcalcError as exc:
            session.rollback()
            outcomes[i] = exc.status_code
        finally:
            session.close()

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)  # only a hung call reaches it
    return outcomes


@on_postgresql
@pytest.mark.own_transactions
def test_concurrent_activations_leave_exactly_one_active_version(admin, deployed):
    assert get_engine().dialect.name == "postgresql"
    tenant_id, engine_id = uuid.UUID(admin.tenant_id), uuid.UUID(deployed.engine_id)
    candidates = _extra_versions(deployed, 8)
    for _ in range(5):
        # WHEN eight administrators activate eight different versions at the same moment
        outcomes = _race(*[
            (lambda s, v=v: versions.activate(s, tenant_id=tenant_id, engine_id=engine_id, version_id=v)) for v in candidates
        ])
        # THEN every activation succeeds, and the engine shows exactly one active version, one of theirs
        assert outcomes == ["ok"] * 8
        detail = admin.get(f"/engines/{deployed.engine_id}").json()
        active = [v["id"] for v in detail["versions"] if v["is_active"]]
        assert len(active) == 1 and active == [detail["active_version_id"]]
        assert uuid.UUID(detail["active_version_id"]) in candidates


@on_postgresql
@pytest.mark.own_transactions
def test_activating_a_version_while_it_is_deleted_never_leaves_a_dangling_active_version(admin, deployed):
    tenant_id, engine_id = uuid.UUID(admin.tenant_id), uuid.UUID(deployed.engine_id)
    for victim in _extra_versions(deployed, 12):
        versions_before = {v["id"] for v in admin.get(f"/engines/{deployed.engine_id}").json()["versions"]}
        assert str(victim) in versions_before
        # WHEN one administrator activates a version while another deletes it
        activated, deleted = _race(
            lambda s: versions.activate(s, tenant_id=tenant_id, engine_id=engine_id, version_id=victim),
            lambda s: versions.delete(s, tenant_id=tenant_id, engine_id=engine_id, version_id=victim),
        )
        # THEN exactly one of them wins: activated (and the delete is refused) or deleted (and activation finds nothing)
        assert (activated, deleted) in (("ok", 409), (404, "ok"))
        detail = admin.get(f"/engines/{deployed.engine_id}").json()
        ids = [v["id"] for v in detail["versions"]]
        # AND the active version is always one that exists
        assert detail["active_version_id"] in ids
        assert [v["id"] for v in detail["versions"] if v["is_active"]] == [detail["active_version_id"]]
