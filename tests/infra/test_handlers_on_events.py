"""The dead-letter and migration handlers on their tests/events/*.json events, and the secrets
loader against Secrets Manager (moto's server, started by the session fixture in conftest.py).

The migration handler answers a real HTTP receiver standing in for CloudFormation's pre-signed
ResponseURL, and migrates a throwaway SQLite database.
"""

from __future__ import annotations

import copy
import json
import os
import sqlite3
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import boto3
import pytest

EVENTS = Path(__file__).resolve().parents[1] / "events"


def load_event(name: str) -> dict:
    return json.loads((EVENTS / name).read_text())


def sqs_event(name: str, *bodies: str) -> dict:
    """The stored SQS event with one record per body (ids made unique)."""
    event = load_event(name)
    template = event["Records"][0]
    event["Records"] = []
    for body in bodies:
        record = copy.deepcopy(template)
        record["messageId"] = str(uuid.uuid4())
        record["body"] = body
        event["Records"].append(record)
    return event


# ----------------------------------------------------------------------------- events


@pytest.mark.parametrize("name", sorted(p.name for p in EVENTS.glob("*.json")))
def test_every_event_file_is_json_of_a_known_shape(name):
    event = load_event(name)
    if name.startswith("sqs_"):
        assert event["Records"] and all(r["eventSource"] == "aws:sqs" for r in event["Records"])
        assert all("job_id" in json.loads(r["body"]) for r in event["Records"])
    elif name.startswith("api_"):
        assert event["version"] == "2.0" and event["requestContext"]["http"]["method"]
    elif name.startswith("cfn_"):
        assert event["RequestType"] in ("Create", "Update", "Delete") and event["ResponseURL"]
    else:
        pytest.fail(f"unexpected event file {name}")


# ----------------------------------------------------------------------------- dead letters


def _pending_job(*, webhook_url: str | None) -> uuid.UUID:
    from shared.db.models import Job, JobStatus, Tenant
    from shared.db.session import session_scope
    from shared.repositories import jobs as job_repo

    with session_scope() as session:
        tenant = Tenant(slug=f"dlq-{uuid.uuid4().hex[:10]}", name="Dead letters")
        session.add(tenant)
        session.flush()
        job = Job(
            tenant_id=tenant.id, engine_id=uuid.uuid4(), engine_name="Loan quote", engine_slug="loan-quote",
            version_id=uuid.uuid4(), version="1.0", status=JobStatus.PROCESSING.value, inputs={"principal": 1},
            webhook_url=webhook_url,
        )
        job_repo.add(session, job)
        return job.id


def _job(job_id: uuid.UUID):
    from shared.db.models import Job
    from shared.db.session import session_scope

    with session_scope() as session:
        return session.get(Job, job_id)


def _webhook_messages(local_aws) -> list[dict]:
    sqs = boto3.client("sqs", endpoint_url=local_aws.endpoint_url, region_name=local_aws.region)
    bodies = []
    while True:
        messages = sqs.receive_message(QueueUrl=local_aws.webhooks_queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get("Messages", [])
        if not messages:
            return bodies
        for message in messages:
            bodies.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=local_aws.webhooks_queue_url, ReceiptHandle=message["ReceiptHandle"])


def test_dead_lettered_job_ends_failed_and_its_webhook_is_queued(local_aws):
    from functions.worker.dlq import handler
    from shared.services.job_runner import DEAD_LETTERED

    # GIVEN a job still processing whose message reached the jobs dead-letter queue
    _webhook_messages(local_aws)
    job_id = _pending_job(webhook_url="https://hooks.example.com/sheetcalc")
    event = load_event("sqs_jobs_dlq.json")
    event["Records"][0]["body"] = json.dumps({"job_id": str(job_id)})

    # WHEN the dead-letter handler runs on the event
    answer = handler(event, None)

    # THEN the record succeeded, the job failed with the generic message, and its webhook is queued
    assert answer == {"batchItemFailures": []}
    job = _job(job_id)
    assert job.status == "failed"
    assert job.error_message == DEAD_LETTERED
    assert {"job_id": str(job_id)} in _webhook_messages(local_aws)


def test_dead_letter_of_a_finished_job_changes_nothing(local_aws):
    from functions.worker.dlq import handler
    from shared.db.session import session_scope
    from shared.db.models import Job

    job_id = _pending_job(webhook_url=None)
    with session_scope() as session:
        session.get(Job, job_id).status = "completed"

    assert handler(sqs_event("sqs_jobs_dlq.json", json.dumps({"job_id": str(job_id)})), None) == {"batchItemFailures": []}
    assert _job(job_id).status == "completed"


def test_a_record_that_fails_is_reported_and_the_others_go_through(local_aws, monkeypatch):
    from functions.worker import dlq
    from shared.services import job_runner

    # GIVEN a batch: one good job, one whose handling raises, one unreadable message
    good, broken = _pending_job(webhook_url=None), uuid.uuid4()
    real = job_runner.fail_dead_lettered

    def flaky(job_id: str) -> None:
        if job_id == str(broken):
            raise ConnectionError("database unavailable")
        real(job_id)

    monkeypatch.setattr(job_runner, "fail_dead_lettered", flaky)
    event = sqs_event("sqs_jobs_dlq.json", json.dumps({"job_id": str(good)}), json.dumps({"job_id": str(broken)}), "not json")

    # WHEN the handler runs
    answer = dlq.handler(event, None)

    # THEN only the failing record is handed back for a retry; the unreadable one is dropped
    assert answer == {"batchItemFailures": [{"itemIdentifier": event["Records"][1]["messageId"]}]}
    assert _job(good).status == "failed"


# ----------------------------------------------------------------------------- migrations


class CloudFormationReceiver:
    """A loopback HTTP server recording the PUTs a custom resource makes to its ResponseURL."""

    def __init__(self):
        self.answers: list[dict] = []
        self.headers: list[dict] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_PUT(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.headers.append(dict(self.headers))
                receiver.answers.append(json.loads(body))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/cloudformation-response?X-Amz-Signature=abc"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def cloudformation():
    with CloudFormationReceiver() as receiver:
        yield receiver


@pytest.fixture()
def throwaway_db(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "migrate.db"
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{path}")
    yield path
    from shared.db.session import reset_engines

    reset_engines()


def _tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {row[0] for row in db.execute("select name from sqlite_master where type = 'table'")}


def _cfn_event(receiver: CloudFormationReceiver, request_type: str = "Create", **properties) -> dict:
    event = load_event("cfn_migrate_create.json")
    event["RequestType"] = request_type
    event["ResponseURL"] = receiver.url
    event["ResourceProperties"].update(properties)
    if request_type != "Create":
        event["PhysicalResourceId"] = "sheetcalc-database-migrations"
    return event


def test_create_migrates_the_database_and_answers_success(cloudformation, throwaway_db):
    from functions.migrate.app import handler

    # WHEN CloudFormation creates the migration resource
    event = _cfn_event(cloudformation)
    handler(event, None)

    # THEN the database has the schema and CloudFormation heard SUCCESS for this request
    assert {"alembic_version", "tenants", "jobs"} <= _tables(throwaway_db)
    (answer,) = cloudformation.answers
    assert answer["Status"] == "SUCCESS"
    assert answer["RequestId"] == event["RequestId"]
    assert answer["StackId"] == event["StackId"]
    assert answer["LogicalResourceId"] == "DatabaseMigration"
    assert answer["PhysicalResourceId"]
    assert cloudformation.headers[0].get("Content-Type", "") == ""


def test_update_migrates_again_and_keeps_the_physical_id(cloudformation, throwaway_db):
    from functions.migrate.app import handler

    handler(_cfn_event(cloudformation, "Update"), None)

    assert "jobs" in _tables(throwaway_db)
    assert cloudformation.answers[0]["Status"] == "SUCCESS"
    assert cloudformation.answers[0]["PhysicalResourceId"] == "sheetcalc-database-migrations"


def test_delete_leaves_the_database_alone(cloudformation, throwaway_db):
    from functions.migrate.app import handler

    handler(_cfn_event(cloudformation, "Delete"), None)

    assert not throwaway_db.exists() or "jobs" not in _tables(throwaway_db)
    assert cloudformation.answers[0]["Status"] == "SUCCESS"


def test_disabled_migrations_answer_success_without_migrating(cloudformation, throwaway_db):
    from functions.migrate.app import handler

    handler(_cfn_event(cloudformation, Enabled="false"), None)

    assert not throwaway_db.exists() or "jobs" not in _tables(throwaway_db)
    assert cloudformation.answers[0]["Status"] == "SUCCESS"


def test_a_failing_migration_answers_failed_with_a_reason(cloudformation, tmp_path, monkeypatch):
    from functions.migrate.app import handler

    # GIVEN a database that cannot be opened
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'no-such-dir' / 'x.db'}")

    handler(_cfn_event(cloudformation), None)

    (answer,) = cloudformation.answers
    assert answer["Status"] == "FAILED"
    assert answer["Reason"].startswith("Migration failed: ")
    assert str(tmp_path) not in answer["Reason"]


class _Context:
    """Just enough of a Lambda context: the time left."""

    def __init__(self, remaining_ms: int):
        self.remaining_ms = remaining_ms
        self.log_stream_name = "2026/11/22/[$LATEST]abc"

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def test_a_migration_that_outlives_the_function_answers_failed_in_time(cloudformation, throwaway_db, monkeypatch):
    from functions.migrate import app

    monkeypatch.setattr(app, "migrate", lambda: time.sleep(5))
    started = time.monotonic()

    app.handle_custom_resource(_cfn_event(cloudformation), _Context(remaining_ms=app.ANSWER_MARGIN_MS + 1000))

    assert time.monotonic() - started < 4
    assert cloudformation.answers[0]["Status"] == "FAILED"
    assert "did not finish" in cloudformation.answers[0]["Reason"]


def test_direct_invocation_migrates(throwaway_db):
    from functions.migrate.app import handler

    assert handler({}, None) == {"status": "migrated"}
    assert "jobs" in _tables(throwaway_db)


# ----------------------------------------------------------------------------- secrets


@pytest.fixture()
def secrets_env(local_aws, monkeypatch):
    """A clean slate: no secret values in the environment, the loader not yet run."""
    from shared import secrets
    from shared.config import reset_settings

    names = (*secrets.SECRET_KEYS.values(), secrets.SECRET_ARN_ENV, "SHEETCALC_ENV")
    saved = {name: os.environ.get(name) for name in names}
    for name in names[:-1]:
        monkeypatch.delenv(name, raising=False)
    secrets.reset()
    yield boto3.client("secretsmanager", endpoint_url=local_aws.endpoint_url, region_name=local_aws.region)
    secrets.reset()
    monkeypatch.undo()
    for name, value in saved.items():  # the loader writes os.environ itself, past monkeypatch
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    reset_settings()


def _secret(client, values: dict) -> str:
    return client.create_secret(Name=f"sheetcalc-{uuid.uuid4().hex}", SecretString=json.dumps(values))["ARN"]


def test_secrets_are_loaded_into_the_environment_once(secrets_env, monkeypatch):
    from shared import secrets
    from shared.config import get_settings

    # GIVEN the application secret and the encryption-key secret, as the template creates them
    app_arn = _secret(secrets_env, {"database_url": os.environ.get("SHEETCALC_TEST_DATABASE_URL") or "sqlite:///:memory:", "jwt_secret": "j" * 64})
    key_arn = _secret(secrets_env, {"encryption_key": "k" * 64})
    monkeypatch.setenv("SHEETCALC_SECRET_ARN", f"{app_arn},{key_arn}")
    monkeypatch.setenv("SHEETCALC_ENV", "prod")

    # WHEN the loader runs at cold start (prod settings refuse to load without these values)
    assigned = secrets.load_secrets_into_env()

    # THEN the values are in the environment and prod settings accept them
    assert set(assigned) == {"DATABASE_URL", "SHEETCALC_JWT_SECRET", "SHEETCALC_ENCRYPTION_KEY"}
    assert os.environ["SHEETCALC_JWT_SECRET"] == "j" * 64
    settings = get_settings()
    assert settings.env == "prod" and settings.encryption_key == "k" * 64

    # AND a second call (a warm invocation) does not fetch again
    secrets_env.put_secret_value(SecretId=key_arn, SecretString=json.dumps({"encryption_key": "x" * 64}))
    monkeypatch.delenv("SHEETCALC_ENCRYPTION_KEY")
    assert secrets.load_secrets_into_env() == []
    assert "SHEETCALC_ENCRYPTION_KEY" not in os.environ


def test_values_already_in_the_environment_win(secrets_env, monkeypatch):
    from shared import secrets

    arn = _secret(secrets_env, {"jwt_secret": "from-secret" * 4, "encryption_key": "e" * 40})
    monkeypatch.setenv("SHEETCALC_SECRET_ARN", arn)
    monkeypatch.setenv("SHEETCALC_JWT_SECRET", "from-environment" * 3)

    assert secrets.load_secrets_into_env() == ["SHEETCALC_ENCRYPTION_KEY"]
    assert os.environ["SHEETCALC_JWT_SECRET"] == "from-environment" * 3


def test_without_a_secret_arn_nothing_is_fetched(secrets_env):
    from shared import secrets

    assert secrets.load_secrets_into_env() == []
    assert "SHEETCALC_JWT_SECRET" not in os.environ


def test_a_missing_secret_is_an_error(secrets_env, monkeypatch, local_aws):
    from shared import secrets

    monkeypatch.setenv("SHEETCALC_SECRET_ARN", f"arn:aws:secretsmanager:{local_aws.region}:123456789012:secret:missing-AbCdEf")

    with pytest.raises(secrets.SecretsError):
        secrets.load_secrets_into_env()
