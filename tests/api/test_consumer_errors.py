"""Every consumer-side row of the spec's errors table, with its status and message word for word."""

from __future__ import annotations

import uuid

import pytest

from shared.db.models import Consumer, Engine, Job
from shared.db.session import session_scope
from tests.factories import deploy_loan, make_admin

INPUTS = {"principal": 100000, "annual_rate": 0.05, "years": 10}


def key(k):
    return {"X-API-Key": k}


def test_input_schema_violation_is_400_with_reason(client, deployed):
    # GIVEN an input schema requiring a positive principal
    schema = {"type": "object", "required": ["principal"], "properties": {"principal": {"type": "number", "exclusiveMinimum": 0}}}
    r = deployed.admin.patch(f"/engines/{deployed.engine_id}/versions/{deployed.version_id}", json={"input_schema": schema})
    assert r.status_code == 200, r.text
    # WHEN a consumer sends a negative one, or none
    neg = client.post(deployed.execute_path, json={"inputs": {"principal": -5}}, headers=key(deployed.api_key))
    missing = client.post(deployed.execute_path, json={"inputs": {"years": 3}}, headers=key(deployed.api_key))
    # THEN both are refused before anything is queued, naming the problem
    assert neg.status_code == 400
    assert neg.json()["detail"].startswith("Input validation failed: ")
    assert "-5" in neg.json()["detail"] and "principal" in neg.json()["detail"]
    assert missing.status_code == 400
    assert missing.json()["detail"] == "Input validation failed: 'principal' is a required property"


def test_input_shape_mismatch_is_400(client, deployed):
    r = client.post(deployed.execute_path, json={"inputs": {"principal": [1, 2]}}, headers=key(deployed.api_key))
    assert r.status_code == 400
    assert r.json()["detail"] == "Input validation failed: 'principal' expects a single value, not a list"


def test_no_active_version_is_400_on_execute_and_about(client, admin, loan_xlsx):
    d = deploy_loan(admin, loan_xlsx, activate=False)
    r = client.post(d.execute_path, json={"inputs": INPUTS}, headers=key(d.api_key))
    assert (r.status_code, r.json()) == (400, {"detail": "Engine has no active version"})
    r = client.get(f"/jobs/about/{admin.slug}/{d.engine_slug}", headers=key(d.api_key))
    assert (r.status_code, r.json()) == (400, {"detail": "Engine has no active version"})


def test_download_before_completion_is_400_with_status(client, deployed):
    job = client.post(deployed.execute_path, json={"inputs": INPUTS}, headers=key(deployed.api_key)).json()
    r = client.get(f"/jobs/{job['job_id']}/download", headers=key(deployed.api_key))
    assert (r.status_code, r.json()) == (400, {"detail": "Job not completed yet. Current status: pending"})


@pytest.mark.parametrize("headers", [{}, {"X-API-Key": "nope"}, {"Authorization": "Bearer nope"}, {"X-API-Key": ""}])
def test_missing_or_unknown_key_is_401(client, deployed, headers):
    r = client.post(deployed.execute_path, json={"inputs": INPUTS}, headers=headers)
    assert (r.status_code, r.json()) == (401, {"detail": "Invalid API key"})
    r = client.get(f"/jobs/{uuid.uuid4()}", headers=headers)
    assert (r.status_code, r.json()) == (401, {"detail": "Invalid API key"})


def test_both_key_headers_work(client, deployed):
    a = client.post(deployed.execute_path, json={"inputs": INPUTS}, headers={"X-API-Key": deployed.api_key})
    b = client.post(deployed.execute_path, json={"inputs": INPUTS}, headers={"Authorization": f"Bearer {deployed.api_key}"})
    assert a.status_code == b.status_code == 202


def test_inactive_consumer_key_is_401(client, deployed):
    with session_scope() as s:
        s.get(Consumer, uuid.UUID(deployed.consumer_id)).is_active = False
    r = client.post(deployed.execute_path, json={"inputs": INPUTS}, headers=key(deployed.api_key))
    assert (r.status_code, r.json()) == (401, {"detail": "Invalid API key"})


def test_permissions_each_refused_with_its_message(client, admin, loan_xlsx, run_worker):
    # GIVEN a consumer that may only execute
    d = deploy_loan(admin, loan_xlsx, flags={"can_execute": True})
    job = client.post(d.execute_path, json={"inputs": INPUTS}, headers=key(d.api_key)).json()
    run_worker()
    # THEN viewing, downloading and reading about are each refused
    r = client.get(f"/jobs/{job['job_id']}", headers=key(d.api_key))
    assert (r.status_code, r.json()) == (403, {"detail": "Consumer does not have view permission for this job"})
    r = client.get(f"/jobs/{job['job_id']}/download", headers=key(d.api_key))
    assert (r.status_code, r.json()) == (403, {"detail": "Consumer does not have download permission for this job"})
    r = client.get(f"/jobs/about/{admin.slug}/{d.engine_slug}", headers=key(d.api_key))
    assert r.status_code == 403
    # AND a consumer without execute is refused at execute
    admin.put(f"/engines/{d.engine_id}/access/{d.consumer_id}", json={"can_execute": False})
    r = client.post(d.execute_path, json={"inputs": INPUTS}, headers=key(d.api_key))
    assert (r.status_code, r.json()) == (403, {"detail": "Consumer does not have execute permission for this engine"})


def test_job_of_another_consumer_is_403(client, deployed, run_worker):
    other = deployed.admin.post("/consumers", json={"name": "Other"}).json()
    deployed.admin.put(f"/engines/{deployed.engine_id}/access/{other['id']}", json={"can_view_jobs": True, "can_download": True})
    job = client.post(deployed.execute_path, json={"inputs": INPUTS}, headers=key(deployed.api_key)).json()
    run_worker()
    r = client.get(f"/jobs/{job['job_id']}", headers=key(other["api_key"]))
    assert (r.status_code, r.json()) == (403, {"detail": "Consumer does not have view permission for this job"})
    r = client.get(f"/jobs/{job['job_id']}/download", headers=key(other["api_key"]))
    assert (r.status_code, r.json()) == (403, {"detail": "Consumer does not have download permission for this job"})


def test_ip_not_whitelisted_is_403_before_the_key(client, deployed):
    with session_scope() as s:
        engine = s.get(Engine, uuid.UUID(deployed.engine_id))
        engine.ip_whitelist_enabled, engine.ip_whitelist = True, ["203.0.113.0/24"]
    for headers in (key(deployed.api_key), {}):
        r = client.post(deployed.execute_path, json={"inputs": INPUTS}, headers=headers)
        assert (r.status_code, r.json()) == (403, {"detail": "Access denied: IP address not in whitelist"})
    r = client.get(f"/jobs/about/{deployed.admin.slug}/{deployed.engine_slug}", headers=key(deployed.api_key))
    assert (r.status_code, r.json()) == (403, {"detail": "Access denied: IP address not in whitelist"})


def test_unknown_engine_or_tenant_is_404(client, deployed):
    r = client.post(f"/jobs/execute/{deployed.admin.slug}/no-such-engine", json={"inputs": INPUTS}, headers=key(deployed.api_key))
    assert (r.status_code, r.json()) == (404, {"detail": "Engine 'no-such-engine' not found"})
    r = client.post(f"/jobs/execute/no-such-tenant/{deployed.engine_slug}", json={"inputs": INPUTS}, headers=key(deployed.api_key))
    assert (r.status_code, r.json()) == (404, {"detail": f"Engine '{deployed.engine_slug}' not found"})
    r = client.get(f"/jobs/about/{deployed.admin.slug}/nothing", headers=key(deployed.api_key))
    assert (r.status_code, r.json()) == (404, {"detail": "Engine 'nothing' not found"})


def test_engine_of_another_tenant_is_404(client, deployed, loan_xlsx):
    # GIVEN tenant B with the same engine slug, and tenant A's consumer
    other = deploy_loan(make_admin(client), loan_xlsx)
    # WHEN A's key addresses B's engine
    r = client.post(other.execute_path, json={"inputs": INPUTS}, headers=key(deployed.api_key))
    # THEN it does not exist for A
    assert (r.status_code, r.json()) == (404, {"detail": f"Engine '{other.engine_slug}' not found"})


def test_unknown_job_is_404(client, deployed):
    r = client.get(f"/jobs/{uuid.uuid4()}", headers=key(deployed.api_key))
    assert (r.status_code, r.json()) == (404, {"detail": "Job not found"})
    r = client.get(f"/jobs/{uuid.uuid4()}/download", headers=key(deployed.api_key))
    assert (r.status_code, r.json()) == (404, {"detail": "Job not found"})


def test_job_of_another_tenant_is_404(client, deployed, loan_xlsx):
    other = deploy_loan(make_admin(client), loan_xlsx)
    job = client.post(other.execute_path, json={"inputs": INPUTS}, headers=key(other.api_key)).json()
    r = client.get(f"/jobs/{job['job_id']}", headers=key(deployed.api_key))
    assert (r.status_code, r.json()) == (404, {"detail": "Job not found"})


def test_completed_job_without_file_is_404(client, deployed, run_worker):
    job = client.post(deployed.execute_path, json={"inputs": INPUTS}, headers=key(deployed.api_key)).json()
    run_worker()
    with session_scope() as s:
        s.get(Job, uuid.UUID(job["job_id"])).result_key = None
    r = client.get(f"/jobs/{job['job_id']}/download", headers=key(deployed.api_key))
    assert (r.status_code, r.json()) == (404, {"detail": "The result file is not available for this job"})


@pytest.mark.parametrize(
    "body",
    [b"{not json", b'{"inputs": [1, 2]}', b'{"inputs": "x"}', b"{}", b'{"inputs": {}, "webhook_url": "ftp://x"}', b"[]"],
)
def test_malformed_bodies_are_422(client, deployed, body):
    r = client.post(deployed.execute_path, content=body, headers={**key(deployed.api_key), "Content-Type": "application/json"})
    assert r.status_code == 422
    assert isinstance(r.json()["detail"], list) and r.json()["detail"]


def test_bad_job_id_is_422(client, deployed):
    r = client.get("/jobs/not-a-uuid", headers=key(deployed.api_key))
    assert r.status_code == 422


def test_test_endpoint_rules(client, deployed, run_worker):
    base = f"/jobs/test/{deployed.admin.slug}/{deployed.engine_slug}"
    # the regular key cannot test; the test key cannot execute
    r = client.post(f"{base}/{deployed.version_id}", json={"inputs": INPUTS}, headers=key(deployed.api_key))
    assert (r.status_code, r.json()) == (401, {"detail": "Invalid API key"})
    r = client.post(deployed.execute_path, json={"inputs": INPUTS}, headers=key(deployed.test_key))
    assert (r.status_code, r.json()) == (401, {"detail": "Invalid API key"})
    # a version id that is not a version of the engine is 404
    r = client.post(f"{base}/{uuid.uuid4()}", json={"inputs": INPUTS}, headers=key(deployed.test_key))
    assert r.status_code == 404
    # the test key runs its version, and can read and download what it created, nothing else
    ok = client.post(f"{base}/{deployed.version_id}", json={"inputs": INPUTS}, headers=key(deployed.test_key))
    assert ok.status_code == 202 and ok.json()["status"] == "pending"
    regular = client.post(deployed.execute_path, json={"inputs": INPUTS}, headers=key(deployed.api_key)).json()
    run_worker()
    mine = client.get(f"/jobs/{ok.json()['job_id']}", headers=key(deployed.test_key))
    assert mine.status_code == 200 and mine.json()["status"] == "completed"
    assert client.get(f"/jobs/{ok.json()['job_id']}/download", headers=key(deployed.test_key)).status_code == 200
    r = client.get(f"/jobs/{regular['job_id']}", headers=key(deployed.test_key))
    assert r.status_code == 403
    # and the consumer cannot read the test key's job
    assert client.get(f"/jobs/{ok.json()['job_id']}", headers=key(deployed.api_key)).status_code == 403
