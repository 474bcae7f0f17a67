"""Shared means fair, for batches and replays too: a chunk of a batch being computed and a shadow
replay running each hold one of the workers of their tenant's share (``tenant_max_concurrent_jobs``),
as a single job does.

A chunk whose tenant has its share busy is not computed and not failed: its message is done and
a new one is queued ``tenant_cap_retry_seconds`` later on the lane it came on, under its tenant's
message group, so it is never a failed delivery counting towards the dead-letter limit. A job
claim counts the tenant's chunks processing and replays running; a chunk counts as one worker,
however many jobs it holds (they are calculated one after another by one worker).
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from dataclasses import dataclass

import pytest
from sqlalchemy import func, select, text, update

from shared.adapters.aws import client
from shared.db.models import Job, JobStatus, Replay
from shared.db.session import session_scope
from shared.devstack.local_aws import create_queue_with_dlq
from shared.devstack.pollers import SqsPoller
from shared.repositories import jobs as job_repo
from shared.repositories import replays as replay_repo
from shared.services import fair_claims, replay_runner, replays
from tests.factories import submit_batch, submit_job
from tests.replays.helpers import upload
from tests.worker.test_fair_claims import new_tenant, pending_jobs
from tests.worker.test_redelivery_and_webhooks import annuity, sqs_event

LOANS = [{"principal": 10000 * (n + 1), "annual_rate": 0.02 + 0.01 * n, "years": 5 + n} for n in range(8)]
LEASE = 900
# Only a hang reaches this: the waits below end as soon as what they wait for happens.
HANG_SECONDS = 60
ON_POSTGRESQL = bool(os.environ.get("SHEETCALC_TEST_DATABASE_URL"))


@pytest.fixture()
def handler():
    from functions.worker.app import handler

    return handler


@dataclass
class Queues:
    jobs: str
    dead_letters: str
    slow: str


@pytest.fixture()
def own_queues(configure):
    """``own_queues()``: a jobs queue (with its dead-letter queue, as the dev stack's: 3
    deliveries) and a slow lane's queue of this test's own, from now on the worker's."""
    sqs = client("sqs")
    made: list[Queues] = []

    def make() -> Queues:
        name = f"fair-{uuid.uuid4().hex[:12]}"
        jobs, dead_letters = create_queue_with_dlq(sqs, name, visibility_timeout=60)
        queues = Queues(jobs, dead_letters, sqs.create_queue(QueueName=f"{name}-slow")["QueueUrl"])
        configure(jobs_queue_url=queues.jobs, slow_jobs_queue_url=queues.slow)
        made.append(queues)
        return queues

    yield make
    for queues in made:
        for url in (queues.jobs, queues.dead_letters, queues.slow):
            sqs.delete_queue(QueueUrl=url)


def tenant_of(deployed) -> uuid.UUID:
    return uuid.UUID(deployed.admin.tenant_id)


def processing(job_ids) -> None:
    """The jobs claimed by a worker, as its batch claim does."""
    with session_scope() as session:
        job_repo.claim_many(session, job_ids=[uuid.UUID(str(j)) for j in job_ids], lease_seconds=LEASE)


def finished(job_ids) -> None:
    with session_scope() as session:
        session.execute(update(Job).where(Job.id.in_([uuid.UUID(str(j)) for j in job_ids])).values(status=JobStatus.COMPLETED))


def claim_chunk(batch_id, chunk: int, chunk_size: int) -> fair_claims.ChunkClaim:
    """Chunk ``chunk`` of the batch claimed as the worker claims it (and left processing)."""
    batch_id = uuid.UUID(str(batch_id))
    with session_scope() as session:
        tenant_id = session.scalar(select(Job.tenant_id).where(Job.batch_id == batch_id).limit(1))
        return fair_claims.claim_chunk(session, batch_id=batch_id, tenant_id=tenant_id, first=chunk * chunk_size,
                                       end=(chunk + 1) * chunk_size, lease_seconds=LEASE)


def claim_jobs(job_ids) -> fair_claims.Claim:
    with session_scope() as session:
        return fair_claims.claim(session, job_ids=[uuid.UUID(str(j)) for j in job_ids], lease_seconds=LEASE)


def batch_statuses(batch_id) -> list[str]:
    with session_scope() as session:
        return [str(s) for s in session.scalars(
            select(Job.status).where(Job.batch_id == uuid.UUID(str(batch_id))).order_by(Job.batch_index))]


def batch_payments(batch_id) -> list[float]:
    with session_scope() as session:
        return [outputs["monthly_payment"] for outputs in session.scalars(
            select(Job.outputs).where(Job.batch_id == uuid.UUID(str(batch_id))).order_by(Job.batch_index))]


def status(job_id) -> str:
    with session_scope() as session:
        return str(session.get(Job, uuid.UUID(str(job_id))).status)


def chunk_event(batch_id, chunk: int, *, queue_arn: str = "arn:aws:sqs:us-east-1:123456789012:sheetcalc-jobs") -> dict:
    """One chunk message as Lambda hands it over, from the queue ``queue_arn``."""
    event = sqs_event(uuid.uuid4())
    record = event["Records"][0]
    record.update(body=json.dumps({"batch_id": str(batch_id), "chunk": chunk}), eventSourceARN=queue_arn)
    return event


def queue_counts(url: str) -> tuple[str, str]:
    """(visible, delayed) messages on the queue."""
    counts = client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return counts["ApproximateNumberOfMessages"], counts["ApproximateNumberOfMessagesDelayed"]


def test_a_chunk_of_a_tenant_at_its_cap_waits_unfailed_and_is_computed_once_there_is_room(
    deployed, configure, own_queues, handler
):
    # GIVEN a share of 2 workers per tenant, and two of the tenant's single jobs being computed
    configure(tenant_max_concurrent_jobs=2, tenant_cap_retry_seconds=0, batch_chunk_size=2)
    busy = [submit_job(deployed, loan) for loan in LOANS[:2]]
    processing(busy)
    # AND a batch of two loans, one chunk, whose message is on the jobs queue
    queues = own_queues()
    batch_id = submit_batch(deployed, LOANS[2:4])
    poller = SqsPoller(queues.jobs, handler, function_name="sheetcalc-worker",
                       endpoint_url=os.environ["SHEETCALC_AWS_ENDPOINT_URL"], region=os.environ["SHEETCALC_AWS_REGION"])
    # WHEN the worker is handed the chunk's message more times than the dead-letter limit (3 in dev)
    for _ in range(5):
        messages = poller.receive(wait_time_seconds=5)
        # THEN each time it is one message of the chunk, under its tenant's group, received for the first time
        assert [json.loads(m["Body"]) for m in messages] == [{"batch_id": batch_id, "chunk": 0}]
        assert messages[0]["Attributes"]["MessageGroupId"] == deployed.admin.tenant_id
        assert messages[0]["Attributes"]["ApproximateReceiveCount"] == "1"
        poller.deliver(messages)
        # AND nothing of the chunk was computed or failed: its jobs wait pending
        assert batch_statuses(batch_id) == ["pending", "pending"]
    # AND nothing went to the dead-letter queue
    assert queue_counts(queues.dead_letters) == ("0", "0")
    # WHEN the single jobs are done and the chunk's message comes again
    finished(busy)
    poller.deliver(poller.receive(wait_time_seconds=5))
    # THEN the chunk is computed: each loan's payment is Excel's PMT (by the formula PMT's page documents)
    assert batch_statuses(batch_id) == ["completed", "completed"]
    assert batch_payments(batch_id) == pytest.approx([annuity(**loan) for loan in LOANS[2:4]], rel=1e-12)
    assert queue_counts(queues.jobs) == ("0", "0")


def test_a_deferred_chunk_is_queued_again_later_on_the_lane_it_came_on(deployed, configure, own_queues, handler):
    # GIVEN a share of one worker, busy on a single job, and a batch of one chunk
    configure(tenant_max_concurrent_jobs=1, tenant_cap_retry_seconds=900, batch_chunk_size=2)
    processing([submit_job(deployed, LOANS[0])])
    batch_id = submit_batch(deployed, LOANS[1:3])
    queues = own_queues()
    # WHEN the chunk's message comes on the slow lane's queue
    slow_arn = "arn:aws:sqs:us-east-1:123456789012:" + queues.slow.rstrip("/").rsplit("/", 1)[-1]
    assert handler(chunk_event(batch_id, 0, queue_arn=slow_arn), None) == {"batchItemFailures": []}
    # THEN its new message waits, delayed 900 seconds, on the slow lane's queue (none on the other)
    assert queue_counts(queues.slow) == ("0", "1")
    assert queue_counts(queues.jobs) == ("0", "0")
    assert batch_statuses(batch_id) == ["pending", "pending"]


def test_a_tenant_whose_chunks_fill_its_cap_has_its_jobs_deferred_while_another_tenants_job_is_claimed(deployed, configure):
    # GIVEN a share of 2 workers, and a batch of 6 loans in chunks of 2
    configure(tenant_max_concurrent_jobs=2, batch_chunk_size=2)
    batch_id = submit_batch(deployed, LOANS[:6])
    # WHEN two workers take its first two chunks
    first, second = claim_chunk(batch_id, 0, 2), claim_chunk(batch_id, 1, 2)
    assert (len(first.jobs), first.deferred, len(second.jobs), second.deferred) == (2, False, 2, False)
    # THEN a third worker defers the third chunk, claiming nothing of it
    third = claim_chunk(batch_id, 2, 2)
    assert (third.jobs, third.deferred) == ([], True)
    assert batch_statuses(batch_id) == ["processing"] * 4 + ["pending"] * 2
    # AND a claim of the tenant's single job and another tenant's job defers the first, takes the second
    mine, theirs = submit_job(deployed, LOANS[6]), pending_jobs(new_tenant(), 1)[0]
    made = claim_jobs([mine, theirs])
    assert [job.id for job in made.jobs] == [theirs]
    assert made.deferred == {uuid.UUID(mine): tenant_of(deployed)} and status(mine) == "pending"


def test_a_chunk_counts_as_one_worker_however_many_jobs_it_holds(deployed, configure):
    # GIVEN a share of 3 workers, one busy on a chunk of 4 jobs
    configure(tenant_max_concurrent_jobs=3, batch_chunk_size=4)
    batch_id = submit_batch(deployed, LOANS[:4])
    assert len(claim_chunk(batch_id, 0, 4).jobs) == 4
    # WHEN three of the tenant's single jobs are claimed together
    singles = [submit_job(deployed, loan) for loan in LOANS[4:7]]
    made = claim_jobs(singles)
    # THEN two are claimed (the chunk is one worker, not four) and the third is deferred
    assert [str(job.id) for job in made.jobs] == singles[:2]
    assert [str(job_id) for job_id in made.deferred] == singles[2:]


@pytest.fixture()
def replay_id(deployed, loan_xlsx, handler) -> uuid.UUID:
    """A queued replay of the tenant's one recorded production job, on a candidate version."""
    recorded = submit_job(deployed, LOANS[7])
    assert handler(sqs_event(recorded), None) == {"batchItemFailures": []}
    candidate = upload(deployed, loan_xlsx, "2.0")
    with session_scope() as session:
        return replays.create(session, tenant_id=tenant_of(deployed), engine_id=uuid.UUID(deployed.engine_id),
                              version_id=uuid.UUID(candidate)).id


def test_a_running_replay_is_one_of_its_tenants_workers(deployed, configure, replay_id):
    # GIVEN a share of 2 workers, one busy on a running replay
    configure(tenant_max_concurrent_jobs=2, batch_chunk_size=2)
    with session_scope() as session:
        assert replay_repo.claim(session, replay_id=replay_id, lease_seconds=LEASE) is not None
    # WHEN two single jobs of the tenant are claimed together
    singles = [submit_job(deployed, loan) for loan in LOANS[:2]]
    made = claim_jobs(singles)
    # THEN one is claimed, the other deferred
    assert [str(job.id) for job in made.jobs] == singles[:1] and [str(j) for j in made.deferred] == singles[1:]
    # AND a chunk of the tenant's batch waits: the replay and the job fill the share
    batch_id = submit_batch(deployed, LOANS[2:4])
    before = batch_updated_at(batch_id)
    assert claim_chunk(batch_id, 0, 2).deferred is True
    # (not claimed and handed back: nothing of it was written)
    assert batch_statuses(batch_id) == ["pending", "pending"] and batch_updated_at(batch_id) == before


def batch_updated_at(batch_id) -> list:
    with session_scope() as session:
        return list(session.scalars(
            select(Job.updated_at).where(Job.batch_id == uuid.UUID(str(batch_id))).order_by(Job.batch_index)))


def test_a_replay_waits_while_its_tenants_chunks_fill_the_cap(deployed, configure, replay_id):
    # GIVEN a share of 2 workers, both busy on chunks of the tenant's batch (4 jobs processing)
    configure(tenant_max_concurrent_jobs=2, tenant_cap_retry_seconds=0, batch_chunk_size=2)
    batch_id = submit_batch(deployed, LOANS[:4])
    assert [claim_chunk(batch_id, chunk, 2).deferred for chunk in (0, 1)] == [False, False]
    # WHEN the replay's message comes, THEN it is queued again, untouched
    assert replay_runner.run(replay_id) == "deferred"
    with session_scope() as session:
        replay = session.get(Replay, replay_id)
        assert (str(replay.status), replay.processed, replay.claimed_at) == ("queued", 0, None)
    # AND once one chunk is done it runs
    finished(job_id for job_id, state in zip(batch_job_ids(batch_id), batch_statuses(batch_id)) if state == "processing")
    assert replay_runner.run(replay_id) == "completed"


def batch_job_ids(batch_id) -> list[uuid.UUID]:
    with session_scope() as session:
        return list(session.scalars(select(Job.id).where(Job.batch_id == uuid.UUID(str(batch_id))).order_by(Job.batch_index)))


def test_with_the_cap_off_chunks_jobs_and_replays_are_taken_as_before(deployed, configure, replay_id):
    configure(tenant_max_concurrent_jobs=0, batch_chunk_size=2)
    # GIVEN the tenant busy on a replay, three single jobs and two chunks
    with session_scope() as session:
        assert replay_repo.claim(session, replay_id=replay_id, lease_seconds=LEASE) is not None
    processing([submit_job(deployed, loan) for loan in LOANS[:3]])
    batch_id = submit_batch(deployed, LOANS[:6])
    # WHEN more of its chunks and jobs come, THEN every one is claimed, none deferred
    taken = [claim_chunk(batch_id, chunk, 2) for chunk in (0, 1, 2)]
    assert [(len(claim.jobs), claim.deferred) for claim in taken] == [(2, False)] * 3
    singles = [submit_job(deployed, loan) for loan in LOANS[3:8]]
    made = claim_jobs(singles)
    assert sorted(str(job.id) for job in made.jobs) == sorted(singles) and made.deferred == {}


def test_a_chunk_is_computed_without_counting_anything_when_the_cap_is_off(deployed, configure, local_aws, handler, monkeypatch):
    from shared.repositories import tenant_workers

    # GIVEN the cap off; nothing may count a tenant's workers
    configure(tenant_max_concurrent_jobs=0, batch_chunk_size=2)
    monkeypatch.setattr(tenant_workers, "count", None)
    monkeypatch.setattr(tenant_workers, "lock", None)
    batch_id = submit_batch(deployed, LOANS[:2])
    # WHEN its chunk's message comes, THEN it is computed as before
    assert handler(chunk_event(batch_id, 0), None) == {"batchItemFailures": []}
    assert batch_payments(batch_id) == pytest.approx([annuity(**loan) for loan in LOANS[:2]], rel=1e-12)


@pytest.mark.own_transactions
@pytest.mark.skipif(not ON_POSTGRESQL, reason="two claims at once need PostgreSQL; SQLite runs one writer at a time")
def test_a_chunk_claimed_while_a_job_claim_takes_the_last_room_is_handed_back(deployed, configure):
    configure(tenant_max_concurrent_jobs=2, batch_chunk_size=2)
    tenant_id = tenant_of(deployed)
    batch_id = submit_batch(deployed, LOANS[:2])
    one, two = submit_job(deployed, LOANS[2]), submit_job(deployed, LOANS[3])
    processing([one])
    outcome: dict = {}
    try:
        with session_scope() as jobs_claim:
            # GIVEN a job claim that took the tenant's last worker, not yet committed
            taken = fair_claims.claim(jobs_claim, job_ids=[uuid.UUID(two)], lease_seconds=LEASE)
            assert [str(job.id) for job in taken.jobs] == [two]

            # WHEN a chunk of the tenant's is claimed meanwhile (it cannot see the job claim yet)
            def take_chunk() -> None:
                try:
                    outcome["claim"] = claim_chunk(batch_id, 0, 2)
                except BaseException as exc:  # shown below, not lost in the thread
                    outcome["claim"] = exc

            worker = threading.Thread(target=take_chunk)
            worker.start()
            # ... and waits for the job claim's end to count again (its tenant's claims are serialized)
            deadline = time.monotonic() + HANG_SECONDS
            while not waiting_for_an_advisory_lock() and worker.is_alive():
                assert time.monotonic() < deadline, "the chunk's claim never waited"
                time.sleep(0.01)
        worker.join(HANG_SECONDS)
        assert not worker.is_alive(), "the chunk's claim hung"
        # THEN the chunk was handed back and deferred: the tenant holds just its 2 workers
        claim = outcome["claim"]
        assert not isinstance(claim, BaseException), claim
        assert (claim.jobs, claim.deferred) == ([], True)
        assert batch_statuses(batch_id) == ["pending", "pending"]
        assert (status(one), status(two)) == ("processing", "processing")
    finally:
        with session_scope() as session:  # nothing of this test is left for another to pick up
            session.execute(update(Job).where(Job.tenant_id == tenant_id).values(status=JobStatus.FAILED))


def waiting_for_an_advisory_lock() -> bool:
    with session_scope() as session:
        return bool(session.scalar(
            select(func.count()).select_from(text("pg_locks")).where(text(
                "locktype = 'advisory' AND NOT granted"
                " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            ))
        ))
