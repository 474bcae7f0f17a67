"""The worker and webhook handlers on real SQS messages: once-only computing, at-most-once webhooks."""

from __future__ import annotations

import io
import json
import uuid

import httpx
import openpyxl
import pytest

from shared.config import reset_settings
from shared.calc import fenced
from shared.db.models import Job
from shared.db.session import session_scope
from shared.errors import ServiceUnavailable
from shared.services import job_runner
from tests.receiver import WebhookReceiver

INPUTS = {"principal": 250000, "annual_rate": 0.045, "years": 30}


def annuity(principal, annual_rate, years):
    r, n = annual_rate / 12, years * 12
    return principal * r / (1 - (1 + r) ** -n)


def sqs_event(*job_ids, receive_count=1):
    """An SQS batch as Lambda hands it over (the shape of tests/events/sqs_jobs.json)."""
    return {
        "Records": [
            {
                "messageId": str(uuid.uuid4()),
                "receiptHandle": "rh",
                "body": json.dumps({"job_id": str(j)}),
                "attributes": {"ApproximateReceiveCount": str(receive_count)},
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:sheetcalc-jobs",
                "awsRegion": "us-east-1",
            }
            for j in job_ids
        ]
    }


def job_row(job_id):
    with session_scope() as s:
        job = s.get(Job, uuid.UUID(str(job_id)))
        s.expunge(job)
        return job


def submit(client, deployed, **extra):
    r = client.post(deployed.execute_path, json={"inputs": INPUTS, **extra}, headers={"X-API-Key": deployed.api_key})
    assert r.status_code == 202, r.text
    return r.json()["job_id"]


def test_the_same_job_message_twice_computes_once(client, deployed, run_worker):
    from functions.worker.app import handler

    run_worker()  # whatever earlier tests left queued
    job_id = submit(client, deployed)
    # WHEN the queued message is handled (a message an earlier test left in flight may become
    # visible again meanwhile, after its visibility timeout: at least this job's is handled)
    assert run_worker() >= 1
    first = job_row(job_id)
    assert first.status == "completed"
    # AND then redelivered
    result = handler(sqs_event(job_id, receive_count=2), None)
    # THEN the second delivery succeeds without touching the finished job
    assert result == {"batchItemFailures": []}
    again = job_row(job_id)
    assert first.status == again.status == "completed"
    assert again.updated_at == first.updated_at and again.completed_at == first.completed_at
    assert again.outputs["monthly_payment"] == pytest.approx(rel=1e-12, expected=annuity(**INPUTS))


def test_a_batch_with_a_duplicate_inside_computes_once(client, deployed):
    from functions.worker.app import handler

    job_id = submit(client, deployed)
    calls = []
    original = job_runner._calculate

    def counting(job, version, workbook):
        calls.append(job.id)
        return original(job, version, workbook)

    job_runner._calculate = counting
    try:
        assert handler(sqs_event(job_id, job_id), None) == {"batchItemFailures": []}
    finally:
        job_runner._calculate = original
    assert calls == [uuid.UUID(job_id)]
    assert job_row(job_id).status == "completed"


def test_filled_workbook_carries_the_answers(client, deployed, run_worker):
    job_id = submit(client, deployed)
    run_worker()
    url = client.get(f"/jobs/{job_id}/download", headers={"X-API-Key": deployed.api_key}).json()["download_url"]
    data = httpx.get(url).content
    values = openpyxl.load_workbook(io.BytesIO(data), data_only=True)
    formulas = openpyxl.load_workbook(io.BytesIO(data))
    payment = values.defined_names["monthly_payment"].destinations
    sheet, cell = next(iter(payment))
    assert values[sheet][cell.replace("$", "")].value == pytest.approx(rel=1e-12, expected=annuity(**INPUTS))
    assert str(formulas[sheet][cell.replace("$", "")].value).startswith("=")


def test_a_job_that_cannot_be_calculated_fails_generically(client, deployed, run_worker):
    # GIVEN a job whose stored version vanished (as if its workbook could not be loaded)
    job_id = submit(client, deployed)
    original = job_runner._calculate

    def broken(job, version, workbook):
        raise ValueError("internal detail: cell Z99 exploded")

    job_runner._calculate = broken
    try:
        run_worker()
    finally:
        job_runner._calculate = original
    view = client.get(f"/jobs/{job_id}", headers={"X-API-Key": deployed.api_key}).json()
    assert view["status"] == "failed"
    assert view["error_message"] == "The workbook could not be calculated with these inputs"
    assert "Z99" not in json.dumps(view)
    assert view["inputs"] == INPUTS and "outputs" not in view
    # AND the service keeps serving
    ok = submit(client, deployed)
    run_worker()
    assert client.get(f"/jobs/{ok}", headers={"X-API-Key": deployed.api_key}).json()["status"] == "completed"


def test_webhook_posts_the_spec_payload_once(client, deployed, run_worker, run_webhooks):
    from functions.webhook.app import handler

    run_worker()
    run_webhooks()  # whatever earlier tests left queued
    with WebhookReceiver(status=200) as receiver:
        job_id = submit(client, deployed, webhook_url=receiver.url)
        run_worker()
        assert run_webhooks() == 1
        # WHEN the webhooks message is delivered a second time
        assert handler(sqs_event(job_id, receive_count=2), None) == {"batchItemFailures": []}
        got = receiver.wait_for(1)
    assert len(got) == 1
    body = got[0]["json"]
    assert set(body) == {"job_id", "status", "inputs", "outputs", "created_at", "completed_at", "execution_time_ms"}
    assert body["job_id"] == job_id and body["status"] == "completed" and body["inputs"] == INPUTS
    assert body["outputs"]["monthly_payment"] == pytest.approx(rel=1e-12, expected=annuity(**INPUTS))
    assert got[0]["headers"]["Content-Type"] == "application/json"
    view = client.get(f"/jobs/{job_id}", headers={"X-API-Key": deployed.api_key}).json()
    assert view["webhook_response_status"] == 200 and view["webhook_sent_at"] and view["webhook_url"] == receiver.url


def test_failed_job_webhook_payload(client, deployed, run_worker, run_webhooks):
    with WebhookReceiver(status=204) as receiver:
        job_id = submit(client, deployed, webhook_url=receiver.url)
        original = job_runner._calculate
        job_runner._calculate = lambda job, version, workbook: (_ for _ in ()).throw(ValueError("boom"))
        try:
            run_worker()
        finally:
            job_runner._calculate = original
        run_webhooks()
        got = receiver.wait_for(1)
    assert set(got[0]["json"]) == {"job_id", "status", "error_message", "created_at", "updated_at"}
    assert got[0]["json"]["status"] == "failed"
    assert job_row(job_id).webhook_response_status == 204


def test_unreachable_or_slow_receiver_records_zero(client, deployed, run_worker, run_webhooks, monkeypatch):
    # connection refused: a port nobody listens on
    with WebhookReceiver() as dead:
        url = dead.url
    job_id = submit(client, deployed, webhook_url=url)
    run_worker()
    run_webhooks()
    assert job_row(job_id).webhook_response_status == 0
    # timeout: a receiver slower than the (shortened) timeout
    monkeypatch.setenv("SHEETCALC_WEBHOOK_TIMEOUT_SECONDS", "0.3")
    reset_settings()
    try:
        with WebhookReceiver(delay=1.5) as slow:
            job_id = submit(client, deployed, webhook_url=slow.url)
            run_worker()
            run_webhooks()
    finally:
        monkeypatch.delenv("SHEETCALC_WEBHOOK_TIMEOUT_SECONDS")
        reset_settings()
    job = job_row(job_id)
    assert job.webhook_response_status == 0 and job.webhook_sent_at is not None
    assert job.status == "completed"


def test_private_webhook_targets_refused_outside_dev(client, deployed, run_worker, run_webhooks, monkeypatch):
    monkeypatch.setenv("SHEETCALC_ALLOW_PRIVATE_WEBHOOKS", "false")
    reset_settings()
    try:
        with WebhookReceiver() as receiver:
            job_id = submit(client, deployed, webhook_url=receiver.url)
            run_worker()
            run_webhooks()
            assert receiver.wait_for(1, timeout=0.5) == []
    finally:
        monkeypatch.delenv("SHEETCALC_ALLOW_PRIVATE_WEBHOOKS")
        reset_settings()
    assert job_row(job_id).webhook_response_status == 0


def test_malformed_message_is_dropped_not_retried(client):
    from functions.worker.app import handler

    event = sqs_event(uuid.uuid4())
    event["Records"][0]["body"] = "not json"
    assert handler(event, None) == {"batchItemFailures": []}


def test_storage_outage_hands_the_job_back_for_redelivery(client, deployed, run_worker):
    from functions.worker.app import handler

    job_id = submit(client, deployed)

    class DownStore:
        def get(self, key):
            raise ServiceUnavailable("Storage is not available")

        put = get

    fenced.reset()
    original = job_runner.get_store
    job_runner.get_store = DownStore
    try:
        result = handler(sqs_event(job_id), None)
    finally:
        job_runner.get_store = original
    # THEN the message is reported failed (SQS redelivers it) and the job is pending again
    assert len(result["batchItemFailures"]) == 1
    assert job_row(job_id).status == "pending"
    # AND the redelivery completes it
    assert handler(sqs_event(job_id, receive_count=2), None) == {"batchItemFailures": []}
    assert job_row(job_id).status == "completed"


def test_a_webhook_message_lost_after_the_job_finished_is_queued_again(client, deployed, run_worker, run_webhooks):
    from functions.worker.app import handler

    with WebhookReceiver() as receiver:
        job_id = submit(client, deployed, webhook_url=receiver.url)

        # GIVEN the webhooks queue fails just after the job finished
        def down(_job_id):
            raise ServiceUnavailable("Job queue is not available")

        original = job_runner.queues.enqueue_webhook
        job_runner.queues.enqueue_webhook = down
        try:
            result = handler(sqs_event(job_id), None)
        finally:
            job_runner.queues.enqueue_webhook = original
        assert len(result["batchItemFailures"]) == 1 and job_row(job_id).status == "completed"
        # WHEN the job message comes back (twice, even)
        handler(sqs_event(job_id, receive_count=2), None)
        handler(sqs_event(job_id, receive_count=3), None)
        run_webhooks()
        got = receiver.wait_for(1)
    # THEN the consumer got the webhook, once
    assert len(got) == 1 and got[0]["json"]["status"] == "completed"
