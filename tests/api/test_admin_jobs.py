"""An administrator runs a version as a test job (no test key to paste), opens a job, downloads
its workbook: the endpoints behind the console's Try it and Jobs pages."""

from __future__ import annotations

import httpx
import pytest

from tests.factories import make_admin

INPUTS = {"principal": 100000, "annual_rate": 0.05, "years": 10}


def annuity(principal, annual_rate, years):
    """The loan's monthly payment by the annuity formula Excel's PMT documents."""
    r, n = annual_rate / 12, years * 12
    return principal * r / (1 - (1 + r) ** -n)


def test_a_test_run_is_a_test_job_of_that_version_and_can_be_opened_and_downloaded(admin, deployed, run_worker):
    # WHEN the administrator runs the active version as a test job, without its test key
    r = admin.post(f"/engines/{deployed.engine_id}/versions/{deployed.version_id}/test-jobs", json={"inputs": INPUTS})
    assert r.status_code == 202, r.text
    job_id = r.json()["job_id"]
    assert r.json()["status"] == "pending"
    pending = admin.get(f"/engines/{deployed.engine_id}/jobs/{job_id}").json()
    assert (pending["status"], pending["outputs"], pending["is_test"], pending["consumer_id"]) == ("pending", None, True, None)
    run_worker()
    # THEN the job shows its inputs, outputs and timings, recorded as a test job
    job = admin.get(f"/engines/{deployed.engine_id}/jobs/{job_id}").json()
    assert (job["status"], job["is_test"], job["consumer_id"], job["version"], job["inputs"]) == ("completed", True, None, "1.0", INPUTS)
    assert job["outputs"]["monthly_payment"] == pytest.approx(annuity(**INPUTS), rel=1e-12)
    assert job["execution_time_ms"] >= 0 and job["completed_at"]
    assert (job["engine_id"], job["version_id"]) == (deployed.engine_id, deployed.version_id)
    # AND it is counted as a test call, like a test-key job
    assert admin.get(f"/engines/{deployed.engine_id}/stats").json()["summary"]["test_calls"] == 1
    # AND its filled workbook downloads through a temporary link
    link = admin.get(f"/engines/{deployed.engine_id}/jobs/{job_id}/download")
    assert link.status_code == 200, link.text
    assert link.json()["filename"].startswith(f"{deployed.engine_slug}_{job_id[:8]}_")
    assert httpx.get(link.json()["download_url"]).content[:2] == b"PK"


def test_a_test_run_runs_an_inactive_version_too(admin, loan_xlsx, run_worker):
    from tests.factories import deploy_loan

    inactive = deploy_loan(admin, loan_xlsx, activate=False)
    r = admin.post(f"/engines/{inactive.engine_id}/versions/{inactive.version_id}/test-jobs", json={"inputs": INPUTS})
    assert r.status_code == 202, r.text
    run_worker()
    assert admin.get(f"/engines/{inactive.engine_id}/jobs/{r.json()['job_id']}").json()["status"] == "completed"


def test_test_run_inputs_are_checked_like_execute(admin, deployed):
    r = admin.post(f"/engines/{deployed.engine_id}/versions/{deployed.version_id}/test-jobs",
                   json={"inputs": {**INPUTS, "principal": [1, 2]}})
    assert r.status_code == 400
    assert r.json()["detail"].startswith("Input validation failed")
    assert admin.get(f"/engines/{deployed.engine_id}/jobs").json()["total"] == 0


def test_downloading_an_unfinished_job_says_so(admin, deployed):
    job_id = admin.post(f"/engines/{deployed.engine_id}/versions/{deployed.version_id}/test-jobs", json={"inputs": INPUTS}).json()["job_id"]
    r = admin.get(f"/engines/{deployed.engine_id}/jobs/{job_id}/download")
    assert (r.status_code, r.json()["detail"]) == (400, "Job not completed yet. Current status: pending")


def test_another_tenants_engine_version_and_jobs_are_not_found(client, admin, deployed):
    job_id = admin.post(f"/engines/{deployed.engine_id}/versions/{deployed.version_id}/test-jobs", json={"inputs": INPUTS}).json()["job_id"]
    other = make_admin(client)
    assert other.post(f"/engines/{deployed.engine_id}/versions/{deployed.version_id}/test-jobs", json={"inputs": INPUTS}).status_code == 404
    assert other.get(f"/engines/{deployed.engine_id}/jobs/{job_id}").status_code == 404
    assert other.get(f"/engines/{deployed.engine_id}/jobs/{job_id}/download").status_code == 404
    # and a job is found only under its own engine
    own_other_engine = admin.post("/engines", json={"name": "Other"}).json()["id"]
    r = admin.get(f"/engines/{own_other_engine}/jobs/{job_id}")
    assert (r.status_code, r.json()["detail"]) == (404, "Job not found")


def test_the_endpoints_need_an_administrator(client, deployed):
    assert client.post(f"/engines/{deployed.engine_id}/versions/{deployed.version_id}/test-jobs", json={"inputs": INPUTS}).status_code == 401
    assert client.post(
        f"/engines/{deployed.engine_id}/versions/{deployed.version_id}/test-jobs", json={"inputs": INPUTS},
        headers={"X-API-Key": deployed.api_key},
    ).status_code == 401
