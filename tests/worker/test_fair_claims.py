"""Fair claims: no tenant holds more than its share of the workers, and a quiet tenant's job is
not held up behind a busy tenant's burst.

A claim takes each tenant's jobs up to its cap (``tenant_max_concurrent_jobs``, a tenant's own
in ``tenant_max_concurrent_jobs_by_tenant``) of jobs processing; the rest stay pending, deferred,
and are queued again a few seconds later under their tenant's message group.
"""

from __future__ import annotations

import json
import threading
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from shared.adapters.aws import client
from shared.db.models import Job, JobStatus
from shared.db.session import session_scope
from shared.db.types import utcnow
from shared.repositories import jobs as job_repo
from shared.services import fair_claims
from tests.factories import create_tenant

INPUTS = {"principal": 100000, "annual_rate": 0.05, "years": 10}
LEASE = 900
# Only a hang reaches this: the threads below wait for one another, not for the clock.
HANG_SECONDS = 120


def pending_jobs(tenant_id: uuid.UUID, count: int) -> list[uuid.UUID]:
    """``count`` jobs of the tenant, pending, as execute commits them (their engine does not matter here)."""
    with session_scope() as session:
        jobs = [job_repo.add(session, Job(
            tenant_id=tenant_id, engine_id=uuid.uuid4(), engine_name="Loan quote", engine_slug="loan-quote",
            version_id=uuid.uuid4(), version="1.0", consumer_id=uuid.uuid4(), consumer_name="Pricing app",
            status=JobStatus.PENDING, inputs=INPUTS,
        )) for _ in range(count)]
        return [job.id for job in jobs]


def processing(tenant_id: uuid.UUID) -> int:
    with session_scope() as session:
        return session.scalar(select(func.count()).select_from(Job).where(Job.tenant_id == tenant_id, Job.status == JobStatus.PROCESSING))


def status(job_id: uuid.UUID) -> str:
    with session_scope() as session:
        return str(session.get(Job, job_id).status)


def finish(job_ids) -> None:
    with session_scope() as session:
        session.execute(update(Job).where(Job.id.in_(list(job_ids))).values(status=JobStatus.COMPLETED))


def new_tenant() -> uuid.UUID:
    return uuid.UUID(create_tenant()["tenant_id"])


def claim(job_ids, **kw):
    with session_scope() as session:
        return fair_claims.claim(session, job_ids=list(job_ids), lease_seconds=LEASE, **kw)


def test_a_busy_tenant_never_holds_more_than_its_cap_and_a_quiet_tenants_job_is_claimed(configure):
    configure(tenant_max_concurrent_jobs=3)
    # GIVEN tenant A with 25 pending jobs and tenant B with one, B's message behind A's burst
    a, b = new_tenant(), new_tenant()
    a_jobs, b_jobs = pending_jobs(a, 25), pending_jobs(b, 1)
    messages = a_jobs + b_jobs
    # WHEN workers claim the messages in batches of ten, as they arrive
    claimed, deferred, held = [], {}, []
    for start in range(0, len(messages), 10):
        made = claim(messages[start:start + 10])
        claimed += [job.id for job in made.jobs]
        deferred.update(made.deferred)
        held.append(processing(a))
    # THEN A never held more than 3 jobs processing: its first three were claimed, in message order
    assert max(held) == 3 and processing(a) == 3
    assert [job_id for job_id in claimed if job_id in a_jobs] == a_jobs[:3]
    # AND B's job was claimed although 22 of A's came before it
    assert b_jobs[0] in claimed and status(b_jobs[0]) == JobStatus.PROCESSING
    # AND A's other jobs are deferred, still pending, each with its tenant for its next message
    assert deferred == {job_id: a for job_id in a_jobs[3:]}
    assert {status(job_id) for job_id in a_jobs[3:]} == {JobStatus.PENDING}


def test_a_deferred_job_is_claimed_once_its_tenant_has_room_again(configure):
    configure(tenant_max_concurrent_jobs=2)
    a = new_tenant()
    jobs = pending_jobs(a, 4)
    first = claim(jobs)
    assert [job.id for job in first.jobs] == jobs[:2] and list(first.deferred) == jobs[2:]
    # WHEN one of its jobs finishes and the deferred jobs' messages come again
    finish(jobs[:1])
    again = claim(jobs[2:])
    # THEN one more is claimed, the other deferred again
    assert [job.id for job in again.jobs] == jobs[2:3] and list(again.deferred) == jobs[3:]
    assert processing(a) == 2


def test_a_tenants_own_cap_overrides_the_default_and_zero_means_no_cap(configure):
    small, unlimited, default = new_tenant(), new_tenant(), new_tenant()
    configure(tenant_max_concurrent_jobs=2, tenant_max_concurrent_jobs_by_tenant=json.dumps({str(small): 1, str(unlimited): 0}))
    jobs = {tenant: pending_jobs(tenant, 4) for tenant in (small, unlimited, default)}
    made = claim([job_id for ids in jobs.values() for job_id in ids])
    held = {tenant: sum(job.tenant_id == tenant for job in made.jobs) for tenant in jobs}
    assert held == {small: 1, unlimited: 4, default: 2}


def test_with_the_cap_off_every_claimable_job_is_claimed(configure):
    configure(tenant_max_concurrent_jobs=0)
    a = new_tenant()
    jobs = pending_jobs(a, 12)
    made = claim(jobs)
    assert sorted(job.id for job in made.jobs) == sorted(jobs) and made.deferred == {}


def test_a_job_already_claimed_or_finished_is_neither_claimed_nor_deferred(configure):
    configure(tenant_max_concurrent_jobs=5)
    a = new_tenant()
    done, taken, fresh = pending_jobs(a, 3)
    finish([done])
    claim([taken])
    # WHEN a batch brings them again, with a fresh one and an unknown id
    made = claim([done, taken, fresh, uuid.uuid4()])
    # THEN only the fresh one is claimed; nothing is deferred (the others are not ours)
    assert [job.id for job in made.jobs] == [fresh] and made.deferred == {}


def test_an_abandoned_claim_does_not_count_against_its_tenant(configure):
    configure(tenant_max_concurrent_jobs=1)
    a = new_tenant()
    abandoned, waiting = pending_jobs(a, 2)
    # GIVEN a claim whose worker died long ago (older than the lease)
    with session_scope() as session:
        job_repo.claim_many(session, job_ids=[abandoned], lease_seconds=LEASE)
        session.execute(update(Job).where(Job.id == abandoned).values(started_at=utcnow() - timedelta(seconds=2 * LEASE)))
    # WHEN another of the tenant's jobs is claimed
    made = claim([waiting])
    # THEN the dead claim leaves room for it
    assert [job.id for job in made.jobs] == [waiting]


def test_deferred_jobs_are_queued_again_later_under_their_tenants_group(configure):
    sqs = client("sqs")
    queue_url = sqs.create_queue(QueueName=f"deferred-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    try:
        configure(jobs_queue_url=queue_url, tenant_cap_retry_seconds=900)
        a = new_tenant()
        deferred = dict.fromkeys(pending_jobs(a, 3), a)
        # WHEN the worker defers them
        failed = fair_claims.defer(deferred)
        # THEN each has a new message, not yet visible (it comes back later), under its tenant's group
        assert failed == {}
        counts = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])["Attributes"]
        assert (counts["ApproximateNumberOfMessages"], counts["ApproximateNumberOfMessagesDelayed"]) == ("0", "3")
        configure(jobs_queue_url=queue_url, tenant_cap_retry_seconds=0)
        again = dict.fromkeys(pending_jobs(a, 2), a)
        fair_claims.defer(again)
        got = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["MessageGroupId"])["Messages"]
        assert sorted(json.loads(m["Body"])["job_id"] for m in got) == sorted(str(job_id) for job_id in again)
        assert {m["Attributes"]["MessageGroupId"] for m in got} == {str(a)}
    finally:
        sqs.delete_queue(QueueUrl=queue_url)


@pytest.mark.own_transactions
def test_workers_claiming_at_once_never_take_more_than_the_cap_together(configure, monkeypatch):
    configure(tenant_max_concurrent_jobs=4)
    workers = 3
    # GIVEN a tenant with 5 pending jobs for each of 3 workers, committed
    a = new_tenant()
    batches = [pending_jobs(a, 5) for _ in range(workers)]
    # AND workers that each read the tenant's room (none taken yet) before any of them claims
    all_have_read = threading.Barrier(workers, timeout=HANG_SECONDS)
    real_claim = job_repo._claim

    def claim_after_everyone_read(*args, **kwargs):
        all_have_read.wait()
        return real_claim(*args, **kwargs)

    monkeypatch.setattr(job_repo, "_claim", claim_after_everyone_read)
    results: list = [None] * workers

    def work(i: int) -> None:
        try:
            results[i] = claim(batches[i])
        except BaseException as exc:  # shown below, not lost in the thread
            results[i] = exc

    threads = [threading.Thread(target=work, args=(i,)) for i in range(workers)]
    try:
        # WHEN they claim at the same time
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(HANG_SECONDS)
        assert not any(thread.is_alive() for thread in threads), "a claim hung"
        assert not [r for r in results if isinstance(r, BaseException)], results
        # THEN together they hold exactly the cap, and every other job is deferred, pending
        claimed = [job.id for made in results for job in made.jobs]
        deferred = [job_id for made in results for job_id in made.deferred]
        assert len(claimed) == 4 and processing(a) == 4
        assert sorted(claimed + deferred) == sorted(job_id for batch in batches for job_id in batch)
        assert {status(job_id) for job_id in deferred} == {JobStatus.PENDING}
    finally:
        with session_scope() as session:  # nothing of this test is left for another to pick up
            session.execute(update(Job).where(Job.tenant_id == a).values(status=JobStatus.FAILED))


def test_the_worker_computes_a_tenants_share_and_queues_the_rest_again_later(deployed, configure, local_aws):
    from functions.worker.app import handler
    from tests.factories import submit_job
    from tests.worker.test_redelivery_and_webhooks import sqs_event

    # GIVEN a cap of 2 jobs processing per tenant, and one tenant's 4 job messages in one batch
    configure(tenant_max_concurrent_jobs=2, tenant_cap_retry_seconds=0)
    ids = [submit_job(deployed, INPUTS) for _ in range(4)]
    sqs = client("sqs")
    sqs.purge_queue(QueueUrl=local_aws.jobs_queue_url)
    # WHEN the worker handles the batch
    assert handler(sqs_event(*ids), None) == {"batchItemFailures": []}
    # THEN two were computed, two wait pending, each with a new message of its tenant's group
    waiting = sorted(j for j in ids if status(uuid.UUID(j)) == "pending")
    assert sorted(status(uuid.UUID(j)) for j in ids) == ["completed", "completed", "pending", "pending"]
    received = sqs.receive_message(QueueUrl=local_aws.jobs_queue_url, MaxNumberOfMessages=10,
                                   AttributeNames=["All"], WaitTimeSeconds=1)["Messages"]
    assert sorted(json.loads(m["Body"])["job_id"] for m in received) == waiting
    assert {m["Attributes"].get("MessageGroupId") for m in received} == {deployed.admin.tenant_id}
    # AND when those messages come, the rest are computed
    assert handler(sqs_event(*waiting), None) == {"batchItemFailures": []}
    assert [status(uuid.UUID(j)) for j in ids] == ["completed"] * 4
