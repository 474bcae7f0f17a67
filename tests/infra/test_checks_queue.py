"""Version checks on a queue of their own: a job never waits behind a fidelity check.

The checks function, its dead-letter handler and the worker run on their real queues (the moto
server of the session fixture) and on the events in tests/events/.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from tests.calc.test_formulas_engine import rates_workbook

EVENTS = Path(__file__).resolve().parents[1] / "events"
GRANT = {"can_execute": True, "can_view_jobs": True, "can_download": True, "can_view_about": True}


def _waiting(queue_url: str) -> int:
    from shared.adapters.aws import client

    attributes = client("sqs").get_queue_attributes(QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages"])
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


def _event(name: str, body: dict) -> dict:
    event = json.loads((EVENTS / name).read_text())
    event["Records"][0]["body"] = json.dumps(body)
    return event


def _deploy_rates(admin) -> tuple[dict, dict, dict]:
    """An active version whose formulas check is still pending, and a consumer's key."""
    engine = admin.post("/engines", json={"name": "Rates"}).json()
    r = admin.post(f"/engines/{engine['id']}/versions", data={"version": "1"}, files={"file": ("rates.xlsx", rates_workbook())})
    assert r.status_code == 201, r.text
    version = r.json()
    assert version["fidelity"]["engines"]["formulas"]["status"] == "pending"
    assert admin.post(f"/engines/{engine['id']}/versions/{version['id']}/activate").status_code == 200
    consumer = admin.post("/consumers", json={"name": "c"}).json()
    assert admin.put(f"/engines/{engine['id']}/access/{consumer['id']}", json=GRANT).status_code == 200
    return engine, version, {"X-API-Key": consumer["api_key"]}


def _formulas_check(admin, engine: dict) -> dict:
    return admin.get(f"/engines/{engine['id']}").json()["versions"][0]["fidelity"]["engines"]["formulas"]


def test_a_job_queued_behind_a_pending_version_check_runs_without_it(client, admin, local_aws, run_worker, run_checks, monkeypatch):
    from shared.services import version_checks

    # GIVEN a new version whose formulas check waits, and a job queued after it
    engine, version, key = _deploy_rates(admin)
    run_worker()  # whatever earlier tests left on the jobs queue
    job = client.post(f"/jobs/execute/{admin.slug}/{engine['slug']}", json={"inputs": {"score": 720}}, headers=key).json()
    # THEN the check is on the checks queue, and the jobs queue holds the job alone
    assert _waiting(local_aws.checks_queue_url) == 1
    assert _waiting(local_aws.jobs_queue_url) == 1

    # WHEN the worker drains the jobs queue (no version check may run there)
    real = version_checks.check_in_background
    monkeypatch.setattr(version_checks, "check_in_background", lambda version_id: pytest.fail("the worker ran a version check"))
    assert run_worker() == 1
    # THEN the job is done, with the engine the version had, and the check still waits
    done = client.get(f"/jobs/{job['job_id']}", headers=key).json()
    assert done["status"] == "completed", done
    assert _formulas_check(admin, engine)["status"] == "pending"
    assert _waiting(local_aws.checks_queue_url) == 1

    # WHEN the checks function drains its queue
    monkeypatch.setattr(version_checks, "check_in_background", real)
    assert run_checks() == 1
    # THEN the check ran, and the version switched to the engine that matches Excel
    assert _formulas_check(admin, engine)["status"] == "ok"
    assert admin.get(f"/engines/{engine['id']}").json()["versions"][0]["calc_engine"] == "formulas"


def test_a_version_check_found_on_the_jobs_queue_is_moved_to_the_checks_queue(local_aws, run_worker, run_checks, monkeypatch):
    from shared.adapters import aws
    from shared.services import version_checks

    # GIVEN a version-check message an earlier release put on the jobs queue
    run_worker()
    run_checks()
    version_id = uuid.uuid4()
    aws.client("sqs").send_message(QueueUrl=local_aws.jobs_queue_url, MessageBody=json.dumps({"version_id": str(version_id)}))
    ran: list[uuid.UUID] = []
    monkeypatch.setattr(version_checks, "check_in_background", ran.append)

    # WHEN the worker takes it, THEN it runs nothing and hands the message to the checks queue
    assert run_worker() == 1
    assert ran == [] and _waiting(local_aws.checks_queue_url) == 1
    # AND the checks function runs it
    assert run_checks() == 1
    assert ran == [version_id]


def test_the_checks_handler_runs_the_check_its_event_names(local_aws, monkeypatch):
    from functions.checks.app import handler
    from shared.services import version_checks

    ran: list[uuid.UUID] = []
    monkeypatch.setattr(version_checks, "check_in_background", ran.append)
    version_id = uuid.uuid4()

    assert handler(_event("sqs_checks.json", {"version_id": str(version_id)}), None) == {"batchItemFailures": []}
    assert ran == [version_id]
    # a job message or an unreadable one is dropped, not retried
    assert handler(_event("sqs_checks.json", {"job_id": str(uuid.uuid4())}), None) == {"batchItemFailures": []}
    assert ran == [version_id]


def test_a_check_that_raises_is_handed_back_for_redelivery(local_aws, monkeypatch):
    from functions.checks.app import handler
    from shared.services import version_checks

    def outage(version_id):
        raise ConnectionError("storage unavailable")

    monkeypatch.setattr(version_checks, "check_in_background", outage)
    event = _event("sqs_checks.json", {"version_id": str(uuid.uuid4())})

    assert handler(event, None) == {"batchItemFailures": [{"itemIdentifier": event["Records"][0]["messageId"]}]}


def test_the_checks_dead_letter_handler_records_the_check_as_failed(client, admin, local_aws):
    from functions.checks.dlq import handler

    # GIVEN a version whose check message ran out of deliveries
    engine, version, _ = _deploy_rates(admin)

    # WHEN the checks dead-letter handler gets it
    assert handler(_event("sqs_checks_dlq.json", {"version_id": version["id"]}), None) == {"batchItemFailures": []}

    # THEN the pending check is recorded failed, and the version keeps its engine
    detail = admin.get(f"/engines/{engine['id']}").json()["versions"][0]
    assert detail["fidelity"]["engines"]["formulas"]["status"] == "failed"
    assert detail["calc_engine"] == "ironcalc"
    # AND an unreadable dead letter is dropped, not retried
    assert handler(_event("sqs_checks_dlq.json", {"nothing": 1}), None) == {"batchItemFailures": []}


def test_the_jobs_dead_letter_handler_still_records_a_version_check_as_failed(local_aws, monkeypatch):
    from functions.worker.dlq import handler
    from shared.services import version_checks

    given_up: list[uuid.UUID] = []
    monkeypatch.setattr(version_checks, "give_up", given_up.append)
    version_id = uuid.uuid4()

    assert handler(_event("sqs_jobs_dlq.json", {"version_id": str(version_id)}), None) == {"batchItemFailures": []}
    assert given_up == [version_id]
