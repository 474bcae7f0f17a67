"""Job messages carry their tenant as MessageGroupId, which makes the standard jobs queue an SQS
fair queue: SQS then delivers quieter tenants' messages first while one tenant has a
disproportionate share in flight. Checked on what moto (the dev stack's SQS) received, through
both ways a message is sent: SQS's JSON protocol straight from ``shared.adapters.sqs_json`` and
botocore's client; and from every place a job's message starts: execute, a batch's chunks, the
sweeper and a job deferred by its tenant's cap.
"""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import update

from shared.adapters import queues
from shared.adapters.aws import client, sqs_calls
from shared.db.models import Job, JobStatus
from shared.db.session import session_scope
from shared.db.types import utcnow
from shared.repositories import jobs as job_repo
from shared.services import fair_claims, sweeper
from tests.factories import submit_batch, submit_job

INPUTS = {"principal": 250000, "annual_rate": 0.045, "years": 30}


@pytest.fixture
def jobs_queue(configure):
    """A fresh standard queue as the jobs queue: what arrives on it is this test's alone."""
    sqs = client("sqs")
    url = sqs.create_queue(QueueName=f"fair-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    configure(jobs_queue_url=url)
    yield url
    sqs.delete_queue(QueueUrl=url)


def received(queue_url: str) -> list[tuple[dict, str | None]]:
    """Every message on the queue: its body and its MessageGroupId as SQS hands it over."""
    sqs, got = client("sqs"), []
    while messages := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"]).get("Messages"):
        got += [(json.loads(m["Body"]), m.get("Attributes", {}).get("MessageGroupId")) for m in messages]
        sqs.delete_message_batch(QueueUrl=queue_url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)])
    return got


def test_the_direct_json_path_sends_the_tenant_as_message_group(jobs_queue, monkeypatch):
    # GIVEN the sender's calls go over SQS's JSON protocol straight to the local endpoint, with no
    # way back to botocore's client (where an answer refused on the direct path would go)
    calls = sqs_calls()
    assert calls.direct

    def not_through_botocore(**_params):
        raise AssertionError("the direct call was refused and made again through botocore")

    monkeypatch.setattr(calls._client, "send_message_batch", not_through_botocore)
    tenant, job = uuid.uuid4(), uuid.uuid4()
    # WHEN a job's message is sent with its tenant
    queues.enqueue_job(job, tenant_id=tenant)
    # THEN SQS took the message group with it
    assert received(jobs_queue) == [({"job_id": str(job)}, str(tenant))]


def test_botocores_path_sends_the_tenant_as_message_group_too(jobs_queue, monkeypatch):
    # GIVEN the sender's calls go through botocore's client (as on AWS)
    monkeypatch.setattr(queues, "sqs_calls", lambda: client("sqs"))
    tenant, job = uuid.uuid4(), uuid.uuid4()
    queues.enqueue_job(job, tenant_id=tenant)
    assert received(jobs_queue) == [({"job_id": str(job)}, str(tenant))]


def test_a_single_send_message_with_a_group_is_accepted_on_a_standard_queue(jobs_queue):
    client("sqs").send_message(QueueUrl=jobs_queue, MessageBody='{"job_id": "x"}', MessageGroupId="tenant-a")
    assert received(jobs_queue) == [({"job_id": "x"}, "tenant-a")]


def test_a_message_without_a_tenant_has_no_group(jobs_queue):
    job = uuid.uuid4()
    queues.enqueue_job(job)
    assert received(jobs_queue) == [({"job_id": str(job)}, None)]


def test_execute_queues_the_job_under_its_tenant(deployed, jobs_queue):
    job_id = submit_job(deployed, INPUTS)
    assert received(jobs_queue) == [({"job_id": job_id}, deployed.admin.tenant_id)]


def test_a_batchs_chunks_are_queued_under_its_tenant(deployed, jobs_queue, configure):
    configure(jobs_queue_url=jobs_queue, batch_chunk_size=2)
    batch_id = submit_batch(deployed, [INPUTS] * 3)
    assert received(jobs_queue) == [({"batch_id": batch_id, "chunk": 0}, deployed.admin.tenant_id),
                                    ({"batch_id": batch_id, "chunk": 1}, deployed.admin.tenant_id)]


def test_the_sweeper_queues_a_lost_job_under_its_tenant(deployed, jobs_queue):
    tenant_id = uuid.UUID(deployed.admin.tenant_id)
    when = utcnow() - timedelta(hours=2)
    with session_scope() as session:
        # Other runs' unfinished jobs on a shared database are set aside (this test's savepoint).
        session.execute(update(Job).where(Job.status.in_([JobStatus.PENDING, JobStatus.PROCESSING])).values(status=JobStatus.FAILED))
        job = job_repo.add(session, Job(
            tenant_id=tenant_id, engine_id=uuid.UUID(deployed.engine_id), engine_name="Loan quote",
            engine_slug=deployed.engine_slug, version_id=uuid.UUID(deployed.version_id), version="1.0",
            consumer_id=uuid.UUID(deployed.consumer_id), consumer_name="Pricing app", status=JobStatus.PENDING,
            inputs=INPUTS, created_at=when, updated_at=when,
        ))
    sweeper.sweep()
    assert received(jobs_queue) == [({"job_id": str(job.id)}, str(tenant_id))]


def test_a_deferred_job_is_queued_again_under_its_tenant(jobs_queue, configure):
    configure(jobs_queue_url=jobs_queue, tenant_cap_retry_seconds=0)
    tenant, job = uuid.uuid4(), uuid.uuid4()
    assert fair_claims.defer({job: tenant}) == {}
    assert received(jobs_queue) == [({"job_id": str(job)}, str(tenant))]
