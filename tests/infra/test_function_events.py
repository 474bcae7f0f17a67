"""The API, worker and webhook handlers run on the very events in tests/events/ (as
`sam local invoke -e` would pass them), against the moto server and the test database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.receiver import WebhookReceiver

EVENTS = Path(__file__).resolve().parents[1] / "events"


def event(name: str) -> dict:
    return json.loads((EVENTS / name).read_text())


def with_job(name: str, job_id: str) -> dict:
    e = event(name)
    e["Records"][0]["body"] = json.dumps({"job_id": job_id})
    return e


def test_api_handler_answers_the_health_event(local_aws):
    from functions.api.app import handler

    response = handler(event("api_health.json"), None)
    assert response["statusCode"] == 200
    assert json.loads(response["body"]) == {"status": "ok", "version": "0.1.0"}


def test_the_three_handlers_carry_a_job_through_on_their_events(deployed, run_worker, run_webhooks):
    from functions.api.app import handler as api
    from functions.webhook.app import handler as webhook
    from functions.worker.app import handler as worker

    with WebhookReceiver() as receiver:
        # GIVEN the execute event, addressed to a deployed engine with a real key
        e = event("api_execute.json")
        path = deployed.execute_path
        e["rawPath"] = e["requestContext"]["http"]["path"] = path
        e["headers"]["x-api-key"] = deployed.api_key
        body = json.loads(e["body"])
        body["webhook_url"] = receiver.url
        e["body"] = json.dumps(body)
        # WHEN API Gateway hands it to the API function
        response = api(e, None)
        assert response["statusCode"] == 202, response
        job_id = json.loads(response["body"])["job_id"]
        # AND the jobs queue hands its message to the worker, and the webhooks queue to the sender
        assert worker(with_job("sqs_jobs.json", job_id), None) == {"batchItemFailures": []}
        assert webhook(with_job("sqs_webhooks.json", job_id), None) == {"batchItemFailures": []}
        hooks = receiver.wait_for(1)
        # the real queues got the same messages: consuming them changes nothing (at most once)
        run_worker()
        run_webhooks()
        assert len(receiver.requests) == 1
    # THEN the consumer's receiver got the completed result
    assert hooks[0]["json"]["job_id"] == job_id and hooks[0]["json"]["status"] == "completed"
    r, n = body["inputs"]["annual_rate"] / 12, body["inputs"]["years"] * 12
    expected = body["inputs"]["principal"] * r / (1 - (1 + r) ** -n)
    assert hooks[0]["json"]["outputs"]["monthly_payment"] == pytest.approx(expected, rel=1e-12)


def test_worker_event_for_an_unknown_job_is_consumed_quietly(local_aws):
    from functions.worker.app import handler

    assert handler(event("sqs_jobs.json"), None) == {"batchItemFailures": []}


def test_the_api_handler_answers_after_something_in_the_process_ran_asyncio_run(local_aws):
    # asyncio.run() leaves the main thread without a current event loop; Mangum needs one.
    import asyncio

    from functions.api.app import handler

    asyncio.run(asyncio.sleep(0))
    response = handler(event("api_health.json"), None)
    assert response["statusCode"] == 200
