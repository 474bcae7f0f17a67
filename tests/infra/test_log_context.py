"""Log context per record: a record of a batch never logs with the job keys of the record before it."""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path

import pytest

EVENTS = Path(__file__).resolve().parents[1] / "events"


def _batch(name: str, *bodies: dict) -> dict:
    event = json.loads((EVENTS / name).read_text())
    template = event["Records"][0]
    event["Records"] = []
    for body in bodies:
        record = copy.deepcopy(template)
        record["messageId"] = str(uuid.uuid4())
        record["body"] = json.dumps(body)
        event["Records"].append(record)
    return event


def _job_keys() -> dict:
    from shared.observability import JOB_KEYS, logger

    return {key: value for key, value in logger.get_current_keys().items() if key in JOB_KEYS and value is not None}


def test_the_second_record_of_a_batch_does_not_log_with_the_first_records_job(client, deployed, monkeypatch):
    from functions.worker.app import handler
    from shared.services import job_runner

    # GIVEN a batch: a real job, a message naming a job that does not exist, another real job
    def submit() -> str:
        r = client.post(deployed.execute_path, json={"inputs": {"principal": 1000, "annual_rate": 0.05, "years": 1}},
                        headers={"X-API-Key": deployed.api_key})
        assert r.status_code == 202, r.text
        return r.json()["job_id"]

    first, unknown, second = submit(), str(uuid.uuid4()), submit()
    seen: dict[str, dict] = {}
    real = job_runner._calculate

    def calculate(job, version, workbook):
        seen[str(job.id)] = _job_keys()
        return real(job, version, workbook)

    monkeypatch.setattr(job_runner, "_calculate", calculate)

    # WHEN the worker handles the batch (the jobs are calculated together)
    assert handler(_batch("sqs_jobs.json", {"job_id": first}, {"job_id": unknown}, {"job_id": second}), None) == {"batchItemFailures": []}

    # THEN each job was calculated logging with its own keys only
    for job_id in (first, second):
        assert seen[job_id] == {"job_id": job_id, "tenant_id": deployed.admin.tenant_id, "engine_id": deployed.engine_id}
    assert unknown not in seen
    # AND none are left after the batch
    assert _job_keys() == {}


def test_a_record_that_raises_leaves_no_job_id_bound_for_the_next(local_aws, monkeypatch):
    from functions.worker.dlq import handler
    from shared.services import job_runner

    # GIVEN a batch of two dead letters; handling the first raises after its job id was bound
    failing = str(uuid.uuid4())
    event = _batch("sqs_jobs_dlq.json", {"job_id": failing}, {"job_id": str(uuid.uuid4())})
    seen: list[tuple[str, dict]] = []

    def fail_dead_lettered(job_id: str) -> None:
        seen.append((job_id, _job_keys()))
        if job_id == failing:
            raise ConnectionError("database unavailable")

    monkeypatch.setattr(job_runner, "fail_dead_lettered", fail_dead_lettered)

    # WHEN the handler runs
    answer = handler(event, None)

    # THEN the first record is handed back, and each record ran with its own job id only
    assert answer == {"batchItemFailures": [{"itemIdentifier": event["Records"][0]["messageId"]}]}
    assert [keys for _, keys in seen] == [{"job_id": job_id} for job_id, _ in seen]
    assert len(seen) == 2 and _job_keys() == {}


@pytest.mark.parametrize("module", ["functions.worker.app", "functions.worker.dlq", "functions.webhook.app",
                                    "functions.checks.app", "functions.checks.dlq"])
def test_every_batch_handler_starts_each_record_without_job_keys(module, monkeypatch):
    import importlib

    from shared.observability import bind

    handler_module = importlib.import_module(module)
    # GIVEN keys a previous record left bound
    bind(tenant_id="t-previous", engine_id="e-previous", job_id="j-previous")
    # WHEN a record is handled (an unreadable one: nothing else happens)
    record = type("Record", (), {"body": "not json", "message_id": "m-1"})()
    handler_module.record_handler(record)
    # THEN nothing of the previous record is bound any more
    assert _job_keys() == {}
