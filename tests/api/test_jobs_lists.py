"""An engine's jobs as the administrator sees them: the paged, filtered list and the recent jobs."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import pytest

from shared.db.models import Job
from shared.db.session import session_scope
from shared.repositories import jobs as job_repo

INPUTS = {"principal": 100000, "annual_rate": 0.05, "years": 10}
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


def add_jobs(deployed, statuses: list[str]) -> list[str]:
    """Job rows for the deployed engine, one a minute from T0 in the order given; returns their ids."""
    ids = []
    with session_scope() as session:
        for i, status in enumerate(statuses):
            created = T0 + timedelta(minutes=i)
            finished = status in ("completed", "failed")
            job = Job(
                tenant_id=uuid.UUID(deployed.admin.tenant_id), engine_id=uuid.UUID(deployed.engine_id), engine_name="Loan quote",
                engine_slug=deployed.engine_slug, version_id=uuid.UUID(deployed.version_id), version="1.0",
                consumer_id=uuid.UUID(deployed.consumer_id), consumer_name="Pricing app", status=status, inputs=INPUTS,
                outputs={"monthly_payment": 1.0} if status == "completed" else None,
                error_message="The workbook could not be calculated with these inputs" if status == "failed" else None,
                execution_time_ms=12 if status == "completed" else None,
                created_at=created, updated_at=created + timedelta(seconds=1), completed_at=created + timedelta(seconds=1) if finished else None,
            )
            job_repo.add(session, job)
            ids.append(str(job.id))
    return ids


# ----------------------------------------------------------------------------- GET /engines/{id}/jobs


def test_jobs_run_through_the_service_are_listed_with_what_happened(client, admin, deployed, run_worker, run_webhooks):
    # GIVEN a consumer job with a webhook, run by the worker, and a test-key job still queued
    done = client.post(
        deployed.execute_path, json={"inputs": INPUTS, "webhook_url": "http://127.0.0.1:9/hook"}, headers={"X-API-Key": deployed.api_key}
    ).json()["job_id"]
    run_worker()
    run_webhooks()  # nothing listens there: the attempt is recorded as 0
    test_job = client.post(
        f"/jobs/test/{admin.slug}/{deployed.engine_slug}/{deployed.version_id}", json={"inputs": INPUTS},
        headers={"X-API-Key": deployed.test_key},
    ).json()["job_id"]
    # WHEN the administrator lists the engine's jobs
    r = admin.get(f"/engines/{deployed.engine_id}/jobs")
    # THEN both appear, newest first, with who ran them, on which version, and how it went
    assert r.status_code == 200
    body = r.json()
    assert (body["total"], body["limit"], body["offset"]) == (2, 50, 0)
    newest, oldest = body["jobs"]
    assert (newest["job_id"], newest["status"], newest["is_test"], newest["consumer_id"], newest["consumer_name"]) == (
        test_job, "pending", True, None, None,
    )
    assert newest["completed_at"] is None and newest["execution_time_ms"] is None
    assert (oldest["job_id"], oldest["status"], oldest["is_test"], oldest["consumer_name"], oldest["version"]) == (
        done, "completed", False, "Pricing app", "1.0",
    )
    assert oldest["consumer_id"] == deployed.consumer_id and oldest["execution_time_ms"] >= 0 and oldest["completed_at"]
    assert oldest["webhook_url"] == "http://127.0.0.1:9/hook" and oldest["error_message"] is None
    assert oldest["webhook_sent_at"] and oldest["webhook_response_status"] == 0
    assert set(oldest) == {
        "job_id", "status", "consumer_id", "consumer_name", "version", "is_test", "created_at", "updated_at", "completed_at",
        "execution_time_ms", "error_message", "webhook_url", "webhook_sent_at", "webhook_response_status",
    }


def test_jobs_are_paged_newest_first_with_the_total(admin, deployed):
    ids = add_jobs(deployed, ["completed"] * 7)
    newest_first = ids[::-1]
    page = admin.get(f"/engines/{deployed.engine_id}/jobs", params={"limit": 3}).json()
    assert ([j["job_id"] for j in page["jobs"]], page["total"], page["limit"], page["offset"]) == (newest_first[:3], 7, 3, 0)
    page = admin.get(f"/engines/{deployed.engine_id}/jobs", params={"limit": 3, "offset": 3}).json()
    assert [j["job_id"] for j in page["jobs"]] == newest_first[3:6]
    page = admin.get(f"/engines/{deployed.engine_id}/jobs", params={"limit": 3, "offset": 6}).json()
    assert [j["job_id"] for j in page["jobs"]] == newest_first[6:]
    page = admin.get(f"/engines/{deployed.engine_id}/jobs", params={"offset": 50}).json()
    assert (page["jobs"], page["total"]) == ([], 7)


def test_status_filter_counts_and_lists_only_that_state(admin, deployed):
    ids = add_jobs(deployed, ["completed", "failed", "pending", "failed", "processing", "completed"])
    for status, expected in (("failed", [ids[3], ids[1]]), ("pending", [ids[2]]), ("processing", [ids[4]]), ("completed", [ids[5], ids[0]])):
        body = admin.get(f"/engines/{deployed.engine_id}/jobs", params={"status": status}).json()
        assert [j["job_id"] for j in body["jobs"]] == expected and body["total"] == len(expected)
        assert {j["status"] for j in body["jobs"]} == {status}
    failed = admin.get(f"/engines/{deployed.engine_id}/jobs", params={"status": "failed", "limit": 1}).json()
    assert failed["total"] == 2 and len(failed["jobs"]) == 1
    assert failed["jobs"][0]["error_message"] == "The workbook could not be calculated with these inputs"


def test_jobs_of_another_engine_are_not_listed(admin, deployed):
    add_jobs(deployed, ["completed"])
    other = admin.post("/engines", json={"name": "Other"}).json()
    assert admin.get(f"/engines/{other['id']}/jobs").json() == {"jobs": [], "total": 0, "limit": 50, "offset": 0}
    assert admin.get(f"/engines/{other['id']}/jobs/recent").json() == []


@pytest.mark.parametrize(
    "params, where",
    [({"limit": 0}, "limit"), ({"limit": 501}, "limit"), ({"limit": "ten"}, "limit"), ({"offset": -1}, "offset"),
     ({"status": "done"}, "status"), ({"status": "COMPLETED"}, "status")],
)
def test_list_parameters_out_of_range_are_422(admin, deployed, params, where):
    r = admin.get(f"/engines/{deployed.engine_id}/jobs", params=params)
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["query", where]


def test_list_limit_bounds_are_accepted(admin, deployed):
    for limit in (1, 500):
        assert admin.get(f"/engines/{deployed.engine_id}/jobs", params={"limit": limit}).json()["limit"] == limit


def test_jobs_of_unknown_engine_are_404(admin):
    for path in (f"/engines/{uuid.uuid4()}/jobs", f"/engines/{uuid.uuid4()}/jobs/recent"):
        r = admin.get(path)
        assert (r.status_code, r.json()) == (404, {"detail": "Engine not found"})


# ----------------------------------------------------------------------------- GET /engines/{id}/jobs/recent


def test_recent_jobs_are_the_latest_twenty_by_default(admin, deployed):
    ids = add_jobs(deployed, ["completed", "failed"] * 12)
    r = admin.get(f"/engines/{deployed.engine_id}/jobs/recent")
    assert r.status_code == 200
    recent = r.json()
    assert [j["job_id"] for j in recent] == ids[::-1][:20]
    assert set(recent[0]) == {
        "job_id", "status", "consumer_id", "consumer_name", "version", "is_test", "created_at", "completed_at", "execution_time_ms",
    }
    assert recent[0]["status"] == "failed" and recent[1]["execution_time_ms"] == 12
    assert [j["job_id"] for j in admin.get(f"/engines/{deployed.engine_id}/jobs/recent", params={"limit": 3}).json()] == ids[::-1][:3]
    assert len(admin.get(f"/engines/{deployed.engine_id}/jobs/recent", params={"limit": 100}).json()) == 24


@pytest.mark.parametrize("limit", [0, 101, -5])
def test_recent_limit_out_of_range_is_422(admin, deployed, limit):
    r = admin.get(f"/engines/{deployed.engine_id}/jobs/recent", params={"limit": limit})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "limit"]
