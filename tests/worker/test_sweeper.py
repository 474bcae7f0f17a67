"""The sweeper queues again what a lost message asked for, and nothing is done twice because of it.

A message can be lost after its row is committed (the process dies between the two, the queue is
down, the dev stack restarts with empty queues). Each test below makes a row whose message never
reached a queue, sweeps, and lets the real handlers consume whatever the sweep queued.
"""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import update

from shared.db.models import EngineVersion, Job, JobStatus
from shared.db.session import session_scope
from shared.db.types import utcnow
from shared.repositories import jobs as job_repo
from shared.adapters import queues
from shared.services import sweeper, version_checks
from tests.receiver import WebhookReceiver

INPUTS = {"principal": 250000, "annual_rate": 0.045, "years": 30}
EVENTS = Path(__file__).resolve().parents[1] / "events"
LONG_AGO = timedelta(hours=2)


def committed_without_message(deployed, *, status=JobStatus.PENDING, age=LONG_AGO, webhook_url=None, **fields) -> uuid.UUID:
    """A job row as execute commits it, whose message never reached the queue."""
    when = utcnow() - age
    with session_scope() as session:
        job = job_repo.add(session, Job(
            tenant_id=uuid.UUID(deployed.admin.tenant_id), engine_id=uuid.UUID(deployed.engine_id),
            engine_name="Loan quote", engine_slug=deployed.engine_slug, version_id=uuid.UUID(deployed.version_id),
            version="1.0", consumer_id=uuid.UUID(deployed.consumer_id), consumer_name="Pricing app",
            status=status, inputs=INPUTS, webhook_url=webhook_url, created_at=when, updated_at=when, **fields,
        ))
        return job.id


def job_row(job_id) -> Job:
    with session_scope() as session:
        job = session.get(Job, job_id)
        session.expunge(job)
        return job


@pytest.fixture(autouse=True)
def only_this_tests_work_is_unfinished():
    """On a shared PostgreSQL database, end-to-end tests leave rows behind (a dev stack stopped
    with jobs still pending, webhooks not yet sent); a sweep would queue them too, ahead of this
    test's own. Within this test's savepoint (rolled back after it) they are set aside."""
    with session_scope() as session:
        session.execute(
            update(Job).where(Job.status.in_([JobStatus.PENDING, JobStatus.PROCESSING])).values(status=JobStatus.FAILED)
        )
        session.execute(update(Job).where(Job.webhook_sent_at.is_(None)).values(webhook_sent_at=utcnow()))


@pytest.fixture()
def settings_env(configure):
    return configure


def test_a_pending_job_whose_message_was_lost_is_computed_after_a_sweep(deployed, run_worker):
    run_worker()
    job_id = committed_without_message(deployed)
    # GIVEN nothing on the queue will ever compute it
    assert run_worker() == 0 and job_row(job_id).status == JobStatus.PENDING
    # WHEN the sweeper runs
    swept = sweeper.sweep()
    # THEN its message is queued again and the worker completes it
    assert swept.jobs >= 1
    run_worker()
    assert job_row(job_id).status == JobStatus.COMPLETED


def worker_counting(local_aws, job_id) -> int:
    """Run the worker on every queued message; how many of them named ``job_id``."""
    from functions.worker.app import handler
    from tests.conftest import drain

    named = []

    def counting(event, context):
        named.extend(json.loads(r["body"])["job_id"] for r in event["Records"])
        return handler(event, context)

    drain(local_aws.jobs_queue_url, counting)
    return named.count(str(job_id))


def test_a_job_swept_again_is_queued_once_and_computed_once(deployed, run_worker, local_aws):
    run_worker()
    job_id = committed_without_message(deployed)
    # GIVEN a sweep queued it again
    sweeper.sweep()
    # WHEN the sweeper runs again before the worker got to it
    sweeper.sweep()
    # THEN it did not add a second message: the first sweep made it pending as of then
    assert worker_counting(local_aws, job_id) == 1
    first = job_row(job_id)
    assert first.status == JobStatus.COMPLETED
    # AND a message arriving for it anyway (its original, late) changes nothing
    queues.enqueue_job(job_id)
    assert worker_counting(local_aws, job_id) == 1
    again = job_row(job_id)
    assert (again.completed_at, again.updated_at, again.started_at) == (first.completed_at, first.updated_at, first.started_at)


def test_a_recent_pending_job_is_left_to_its_own_message(deployed, run_worker, settings_env):
    settings_env(sweeper_requeue_after_seconds=600)
    run_worker()
    job_id = committed_without_message(deployed, age=timedelta(seconds=5))
    sweeper.sweep()
    run_worker()
    assert job_row(job_id).status == JobStatus.PENDING


def test_a_job_processing_past_its_lease_is_computed_again_and_one_within_it_is_not(deployed, run_worker, settings_env, local_aws):
    settings_env(processing_lease_seconds=900)
    run_worker()
    # GIVEN a job whose worker died 20 minutes ago, and one whose worker started a minute ago
    dead = committed_without_message(deployed, status=JobStatus.PROCESSING, started_at=utcnow() - timedelta(minutes=20))
    busy_since = utcnow() - timedelta(minutes=1)
    busy = committed_without_message(deployed, status=JobStatus.PROCESSING, started_at=busy_since)
    # WHEN the sweeper runs (twice: the worker is busy elsewhere) and the worker handles what it queued
    sweeper.sweep()
    sweeper.sweep()
    # THEN the abandoned job was queued once and is completed; the one within its lease is not touched
    assert worker_counting(local_aws, dead) == 1
    assert job_row(dead).status == JobStatus.COMPLETED
    still = job_row(busy)
    assert still.status == JobStatus.PROCESSING and still.started_at == busy_since


def test_a_webhook_never_attempted_is_sent_once(deployed, run_worker, run_webhooks):
    run_worker()
    run_webhooks()
    with WebhookReceiver() as receiver:
        # GIVEN a job finished long ago whose webhook message was lost
        job_id = committed_without_message(
            deployed, status=JobStatus.COMPLETED, webhook_url=receiver.url, outputs={"monthly_payment": 1.0},
            completed_at=utcnow() - LONG_AGO,
        )
        # WHEN the sweeper runs twice and the sender handles every message
        sweeper.sweep()
        sweeper.sweep()
        run_webhooks()
        # THEN the consumer got its result exactly once
        hooks = receiver.wait_for(1)
        run_webhooks()
        assert [h["json"]["job_id"] for h in receiver.requests] == [str(job_id)]
    assert hooks[0]["json"]["status"] == "completed"
    assert job_row(job_id).webhook_response_status == 200


def test_a_webhook_whose_attempt_may_have_begun_is_never_sent_again(deployed, run_webhooks):
    run_webhooks()
    with WebhookReceiver() as receiver:
        # GIVEN the sender recorded its attempt and then died, before or during the POST
        committed_without_message(
            deployed, status=JobStatus.COMPLETED, webhook_url=receiver.url, outputs={"monthly_payment": 1.0},
            completed_at=utcnow() - LONG_AGO, webhook_sent_at=utcnow() - LONG_AGO,
        )
        # WHEN the sweeper runs
        sweeper.sweep()
        run_webhooks()
        # THEN nothing is sent: a webhook is at most once
        assert receiver.wait_for(1, timeout=1) == []


def test_a_version_check_that_never_ran_is_queued_again(deployed, run_checks):
    run_checks()
    version_id = uuid.UUID(deployed.version_id)
    # GIVEN a version uploaded long ago whose document-library copy is still pending
    with session_scope() as session:
        version = session.get(EngineVersion, version_id)
        version.document_storage = version_checks.document_storage_record(version_checks.PENDING_COPY)
        version.created_at = utcnow() - LONG_AGO
    # WHEN the sweeper runs and the checks function handles what it queued
    assert sweeper.sweep().version_checks >= 1
    run_checks()
    # THEN the copy's outcome is recorded (this tenant has no library configured)
    with session_scope() as session:
        assert session.get(EngineVersion, version_id).document_storage["status"] == version_checks.NOT_CONFIGURED


def test_at_start_the_dev_stack_queues_everything_from_before_it_whatever_its_age(deployed, run_worker, settings_env):
    settings_env(sweeper_requeue_after_seconds=600)
    run_worker()
    # GIVEN a job accepted a second before a restart emptied the queues
    job_id = committed_without_message(deployed, age=timedelta(seconds=1))
    # WHEN the restarted stack sweeps with the time its queues began empty
    sweeper.sweep(queues_empty_since=utcnow())
    run_worker()
    # THEN the job is computed without waiting for the usual age
    assert job_row(job_id).status == JobStatus.COMPLETED


def test_a_sweep_sends_at_most_a_batch_of_each_kind(deployed, run_worker, settings_env):
    settings_env(sweeper_batch_size=2)
    run_worker()
    for _ in range(3):
        committed_without_message(deployed)
    assert sweeper.sweep().jobs == 2
    run_worker()


def test_the_sweeper_function_answers_its_scheduled_event(deployed, run_worker):
    from functions.sweeper.app import handler

    run_worker()
    job_id = committed_without_message(deployed)
    # GIVEN the EventBridge event the schedule in template.yaml sends
    event = json.loads((EVENTS / "scheduled_sweep.json").read_text())
    # WHEN Lambda hands it to the sweeper function
    result = handler(event, None)
    # THEN it reports what it queued again, and the job it queued is computed
    assert set(result) == {"jobs", "webhooks", "version_checks"} and result["jobs"] >= 1
    run_worker()
    assert job_row(job_id).status == JobStatus.COMPLETED


def test_a_lost_job_of_a_slow_version_is_queued_again_on_the_slow_lane(deployed, local_aws):
    from functions.worker.app import handler
    from tests.conftest import drain

    # GIVEN a version whose jobs take the slow lane, and a job of it whose message was lost
    with session_scope() as session:
        session.execute(update(EngineVersion).where(EngineVersion.id == uuid.UUID(deployed.version_id)).values(lane="slow"))
    job_id = committed_without_message(deployed)
    # WHEN the sweeper queues it again
    assert sweeper.sweep().jobs >= 1
    # THEN its message is on the slow lane's queue, where the slow workers compute it
    assert drain(local_aws.jobs_queue_url, handler) == 0
    assert drain(local_aws.slow_jobs_queue_url, handler) >= 1
    assert job_row(job_id).status == JobStatus.COMPLETED
