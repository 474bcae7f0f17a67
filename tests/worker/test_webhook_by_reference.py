"""A job's webhook body stays within ``max_webhook_payload_bytes``: over it, the body goes without
``outputs`` (then without ``inputs``), flags each one left out (``"outputs_omitted": true``) and
names the job's path to poll, signed as every webhook is; within it, the spec's payload is sent
unchanged. The loan job's body is about 1.1 KB, its outputs 0.9 KB: a 1,024-byte limit shows both."""

from __future__ import annotations

from tests.factories import submit_job
from tests.receiver import WebhookReceiver
from tests.worker.test_webhook_signing import python_verify, read_secret

INPUTS = {"principal": 250000, "annual_rate": 0.045, "years": 30}
SPEC_FIELDS = {"job_id", "status", "inputs", "outputs", "created_at", "completed_at", "execution_time_ms"}


def received(deployed, run_worker, run_webhooks, inputs: dict) -> tuple[str, dict]:
    """A job's webhook as a real receiver got it: the job id and the request."""
    with WebhookReceiver() as receiver:
        job_id = submit_job(deployed, inputs, webhook_url=receiver.url)
        run_worker()
        run_webhooks()
        return job_id, receiver.wait_for(1)[0]


def poll(client, deployed, path: str) -> dict:
    r = client.get(path, headers={"X-API-Key": deployed.api_key})
    assert r.status_code == 200, r.text
    return r.json()


def test_a_webhook_within_the_limit_is_the_spec_payload_unchanged(client, deployed, run_worker, run_webhooks):
    job_id, request = received(deployed, run_worker, run_webhooks, INPUTS)
    assert set(request["json"]) == SPEC_FIELDS
    assert request["json"]["outputs"] == poll(client, deployed, f"/jobs/{job_id}")["outputs"]


def test_outputs_over_the_limit_go_by_reference_signed_and_readable_by_polling(client, deployed, run_worker, run_webhooks, configure):
    # GIVEN a payload limit below the loan job's whole body
    configure(max_webhook_payload_bytes=1024)
    # WHEN its job finishes
    job_id, request = received(deployed, run_worker, run_webhooks, INPUTS)
    body = request["json"]
    # THEN the body is within the limit, without outputs, saying so and where to read them
    assert len(request["raw"]) <= 1024
    assert "outputs" not in body and body["outputs_omitted"] is True and body["job_path"] == f"/jobs/{job_id}"
    assert set(body) == SPEC_FIELDS - {"outputs"} | {"outputs_omitted", "job_path"}
    assert body["inputs"] == INPUTS and body["status"] == "completed"
    # AND it is signed as every webhook is
    assert python_verify(read_secret(deployed.admin), request["headers"]["Sheetcalc-Signature"], request["raw"]) is True
    # AND the consumer reads the outputs at that path
    outputs = poll(client, deployed, body["job_path"])["outputs"]
    assert set(outputs) == {"monthly_payment", "total_paid", "total_interest", "end_date", "schedule"}


def test_inputs_too_are_left_out_when_the_body_is_still_over_the_limit(client, deployed, run_worker, run_webhooks, configure):
    # GIVEN inputs that alone are over the limit (a key no range names is kept with the job)
    configure(max_webhook_payload_bytes=1024)
    inputs = {**INPUTS, "note": "x" * 2000}
    # WHEN the job finishes
    _, request = received(deployed, run_worker, run_webhooks, inputs)
    body = request["json"]
    # THEN both are left out and flagged, and the rest of the spec's fields stay
    assert len(request["raw"]) <= 1024
    assert body["outputs_omitted"] is True and body["inputs_omitted"] is True
    assert set(body) == SPEC_FIELDS - {"outputs", "inputs"} | {"outputs_omitted", "inputs_omitted", "job_path"}
    assert poll(client, deployed, body["job_path"])["inputs"] == inputs


def test_an_administrators_redelivery_goes_by_reference_too(client, deployed, run_worker, run_webhooks, configure):
    configure(max_webhook_payload_bytes=1024)
    with WebhookReceiver() as receiver:
        job_id = submit_job(deployed, INPUTS, webhook_url=receiver.url)
        run_worker()
        run_webhooks()
        r = deployed.admin.post(f"/engines/{deployed.engine_id}/jobs/{job_id}/webhook-redeliveries")
        assert r.status_code == 202, r.text
        run_webhooks()
        first, again = receiver.wait_for(2)
    assert again["json"]["outputs_omitted"] is True and "outputs" not in again["json"]
    assert again["json"]["job_path"] == first["json"]["job_path"] == f"/jobs/{job_id}"
