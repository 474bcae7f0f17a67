"""The webhook and the job it reports agree: the payload's timestamps are written exactly as the
API writes them (``...Z``), and the job shows no ``webhook_response_status`` (not even null)
until the receiver has answered."""

from __future__ import annotations

import threading

from shared.services import job_runner
from tests.receiver import WebhookReceiver

INPUTS = {"principal": 250000, "annual_rate": 0.045, "years": 30}


def submit(client, deployed, webhook_url: str) -> str:
    r = client.post(deployed.execute_path, json={"inputs": INPUTS, "webhook_url": webhook_url}, headers={"X-API-Key": deployed.api_key})
    assert r.status_code == 202, r.text
    return r.json()["job_id"]


def poll(client, deployed, job_id: str) -> dict:
    r = client.get(f"/jobs/{job_id}", headers={"X-API-Key": deployed.api_key})
    assert r.status_code == 200, r.text
    return r.json()


def test_a_completed_jobs_webhook_writes_its_timestamps_as_the_api_does(client, deployed, run_worker, run_webhooks):
    with WebhookReceiver() as receiver:
        job_id = submit(client, deployed, receiver.url)
        run_worker()
        run_webhooks()
        payload = receiver.wait_for(1)[0]["json"]
    view = poll(client, deployed, job_id)
    assert payload["created_at"] == view["created_at"] and payload["completed_at"] == view["completed_at"]
    assert payload["created_at"].endswith("Z") and "+00:00" not in payload["completed_at"]


def test_a_failed_jobs_webhook_writes_its_timestamps_as_the_api_does(client, deployed, run_worker, run_webhooks, monkeypatch):
    monkeypatch.setattr(job_runner, "_calculate", lambda job, version, workbook: (_ for _ in ()).throw(ValueError("boom")))
    with WebhookReceiver() as receiver:
        job_id = submit(client, deployed, receiver.url)
        run_worker()
        run_webhooks()
        payload = receiver.wait_for(1)[0]["json"]
    view = poll(client, deployed, job_id)
    assert view["status"] == "failed"
    assert payload["created_at"] == view["created_at"] and payload["updated_at"] == view["updated_at"]
    assert payload["updated_at"].endswith("Z")


def test_while_the_webhook_post_is_in_flight_its_status_is_left_out_not_null(client, deployed, run_worker, run_webhooks):
    released = threading.Event()
    with WebhookReceiver(status=202, hold=released) as receiver:
        job_id = submit(client, deployed, receiver.url)
        run_worker()
        sender = threading.Thread(target=run_webhooks)
        sender.start()
        try:
            # GIVEN the receiver has the POST and has not answered yet
            assert len(receiver.wait_for(1, timeout=60)) == 1
            # WHEN the consumer polls the job
            in_flight = poll(client, deployed, job_id)
        finally:
            released.set()
            sender.join(60)
    # THEN the attempt is shown, its status is not (the field is an integer: absent until known)
    assert in_flight["status"] == "completed" and in_flight["webhook_sent_at"]
    assert "webhook_response_status" not in in_flight
    # and once the receiver answered, it is there
    assert poll(client, deployed, job_id)["webhook_response_status"] == 202


def test_the_openapi_schema_says_the_webhook_status_is_an_optional_integer(client):
    job = client.get("/openapi.json").json()["components"]["schemas"]["JobResponse"]
    assert "webhook_response_status" not in job.get("required", [])
    assert job["properties"]["webhook_response_status"]["type"] == "integer"
    assert "anyOf" not in job["properties"]["webhook_response_status"]
