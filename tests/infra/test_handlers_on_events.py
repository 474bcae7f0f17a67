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

from tests.envtools import settings_env

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
        # the checks queues carry version ids, the others job ids
        key = "version_id" if name.startswith("sqs_checks") else "job_id"
        assert all(key in json.loads(r["body"]) for r in event["Records"])
    elif name.startswith("api_"):
        assert event["version"] == "2.0" and event["requestContext"]["http"]["method"]
    elif name.startswith("cfn_"):
        assert event["RequestType"] in ("Create", "Update", "Delete") and event["ResponseURL"]
    elif name.startswith("scheduled_"):
        assert event["source"] == "aws.events" and event["detail-type"] == "Scheduled Event"
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
def throwaway_db(tmp_path) -> Path:
    from shared.db.session import reset_engines

    path = tmp_path / "migrate.db"
    with settings_env(DATABASE_URL=f"sqlite:///{path}"):
        yield path
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
    with settings_env(DATABASE_URL=f"sqlite:///{tmp_path / 'no-such-dir' / 'x.db'}"):
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

    # GIVEN a migration that would run for a minute, and one second left before the margin
    monkeypatch.setattr(app, "migrate", lambda: time.sleep(60))
    started = time.monotonic()

    app.handle_custom_resource(_cfn_event(cloudformation), _Context(remaining_ms=app.ANSWER_MARGIN_MS + 1000))

    # THEN the handler answers long before the migration could have ended (busy machines included)
    assert time.monotonic() - started < 30
    assert cloudformation.answers[0]["Status"] == "FAILED"
    assert "did not finish" in cloudformation.answers[0]["Reason"]


def test_direct_invocation_migrates(throwaway_db):
    from functions.migrate.app import handler

    assert handler({}, None) == {"status": "migrated"}
    assert "jobs" in _tables(throwaway_db)


# ----------------------------------------------------------------------------- secrets


SECRET_ENV = ("DATABASE_URL", "SHEETCALC_DATABASE_URL", "SHEETCALC_JWT_SECRET", "SHEETCALC_ENCRYPTION_KEY")


@pytest.fixture()
def secrets_env(local_aws, monkeypatch):
    """A clean slate: no secret values in the environment, nothing fetched yet; settings re-read after."""
    from shared import secrets
    from shared.config import reset_settings

    for name in (*SECRET_ENV, secrets.SECRET_ARN_ENV):
        monkeypatch.delenv(name, raising=False)
    secrets.reset()
    reset_settings()
    yield boto3.client("secretsmanager", endpoint_url=local_aws.endpoint_url, region_name=local_aws.region)
    secrets.reset()
    monkeypatch.undo()
    reset_settings()


def _secret(client, values: dict) -> str:
    return client.create_secret(Name=f"sheetcalc-{uuid.uuid4().hex}", SecretString=json.dumps(values))["ARN"]


def test_settings_read_the_secrets_once(secrets_env, monkeypatch):
    from shared import secrets
    from shared.config import get_settings, reset_settings

    # GIVEN the application secret and the encryption-key secret, as the template creates them
    database_url = os.environ.get("SHEETCALC_TEST_DATABASE_URL") or "sqlite:///:memory:"
    app_arn = _secret(secrets_env, {"database_url": database_url, "jwt_secret": "j" * 64})
    key_arn = _secret(secrets_env, {"encryption_key": "k" * 64})
    monkeypatch.setenv("SHEETCALC_SECRET_ARN", f"{app_arn},{key_arn}")
    monkeypatch.setenv("SHEETCALC_ENV", "prod")
    environment = dict(os.environ)

    # WHEN the settings are first read (prod settings refuse to load without these values)
    settings = get_settings()

    # THEN they hold the secrets' values, and prod settings accept them
    assert settings.env == "prod" and settings.encryption_key == "k" * 64
    assert settings.jwt_secret == "j" * 64 and settings.database_url == database_url
    assert secrets.secret_values() == {"database_url": database_url, "jwt_secret": "j" * 64, "encryption_key": "k" * 64}
    # AND nothing was written into the environment
    assert dict(os.environ) == environment and not any(os.environ.get(name) for name in SECRET_ENV)

    # AND settings read again (a warm invocation, or after a reset) do not fetch again
    secrets_env.put_secret_value(SecretId=key_arn, SecretString=json.dumps({"encryption_key": "x" * 64}))
    reset_settings()
    assert get_settings().encryption_key == "k" * 64
    assert "SHEETCALC_ENCRYPTION_KEY" not in os.environ


def test_values_already_in_the_environment_win(secrets_env, monkeypatch):
    from shared import secrets
    from shared.config import get_settings

    arn = _secret(secrets_env, {"jwt_secret": "from-secret" * 4, "encryption_key": "e" * 40, "database_url": "sqlite:///secret.db"})
    monkeypatch.setenv("SHEETCALC_SECRET_ARN", arn)
    monkeypatch.setenv("SHEETCALC_JWT_SECRET", "from-environment" * 3)
    monkeypatch.setenv("DATABASE_URL", "sqlite:///environment.db")

    settings = get_settings()
    assert (settings.jwt_secret, settings.encryption_key) == ("from-environment" * 3, "e" * 40)
    assert settings.database_url == "sqlite:///environment.db"
    assert os.environ["SHEETCALC_JWT_SECRET"] == "from-environment" * 3
    assert "SHEETCALC_ENCRYPTION_KEY" not in os.environ
    assert secrets.secret_values()["jwt_secret"] == "from-secret" * 4


def test_without_a_secret_arn_nothing_is_fetched(secrets_env, monkeypatch):
    from shared import secrets
    from shared.config import PLACEHOLDER_SECRET, get_settings

    monkeypatch.setattr(secrets, "_fetch", lambda arn: pytest.fail(f"fetched {arn}"))

    assert secrets.secret_values() == {}
    assert get_settings().jwt_secret == PLACEHOLDER_SECRET
    assert "SHEETCALC_JWT_SECRET" not in os.environ


def test_a_missing_secret_is_an_error(secrets_env, monkeypatch, local_aws):
    from shared import secrets
    from shared.config import get_settings

    monkeypatch.setenv("SHEETCALC_SECRET_ARN", f"arn:aws:secretsmanager:{local_aws.region}:123456789012:secret:missing-AbCdEf")

    with pytest.raises(secrets.SecretsError):
        get_settings()
    with pytest.raises(secrets.SecretsError):
        secrets.secret_values()


def test_importing_a_handler_reads_no_settings_and_no_secrets(secrets_env, monkeypatch):
    import importlib
    import sys

    from shared import config, secrets

    # GIVEN secrets that cannot be read, and no settings read yet
    monkeypatch.setenv("SHEETCALC_SECRET_ARN", "arn:aws:secretsmanager:us-east-1:123456789012:secret:unreadable-AbCdEf")
    monkeypatch.setattr(secrets, "_fetch", lambda arn: pytest.fail(f"fetched {arn} at import"))
    config.reset_settings()
    handlers = ("functions.api.app", "functions.worker.app", "functions.worker.dlq", "functions.checks.app",
                "functions.checks.dlq", "functions.webhook.app", "functions.migrate.app")
    # WHEN every handler module is imported afresh
    for name in handlers:
        monkeypatch.delitem(sys.modules, name, raising=False)
        importlib.import_module(name)
    # THEN no settings were built (so no secret was fetched)
    assert config.get_settings.cache_info().currsize == 0
