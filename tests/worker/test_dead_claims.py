"""Claims whose process is gone are handed back at once, not a lease later.

Each claim records its claimant (host, PID namespace, boot, pid, the process's start time). A
restarted dev stack (and every sweep) hands back to pending, and queues again, the jobs claimed by
processes of this machine that no longer run; a claim of a live process, or of another machine,
is left alone; a pid now used by another process is not mistaken for the one that claimed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from sqlalchemy import update

from shared import claimants
from shared.adapters.aws import client
from shared.db.models import Job, JobStatus
from shared.db.session import session_scope
from shared.repositories import jobs as job_repo
from shared.services import dead_claims, sweeper

REPO = Path(__file__).resolve().parents[2]
INPUTS = {"principal": 250000, "annual_rate": 0.045, "years": 30}
LEASE = 900
# Only a hang reaches this.
HANG_SECONDS = 60


@pytest.fixture(autouse=True)
def only_this_tests_claims_are_held():
    """On a shared PostgreSQL database, other runs on this machine may have left jobs processing
    (a dev stack killed by a test): within this test's savepoint, they are set aside."""
    with session_scope() as session:
        session.execute(update(Job).where(Job.status.in_([JobStatus.PENDING, JobStatus.PROCESSING])).values(status=JobStatus.FAILED))


def claimant_of_a_process_that_ended() -> str:
    """The claimant a process of this machine recorded before it exited."""
    done = subprocess.run([sys.executable, "-c", "from shared import claimants; print(claimants.current())"],
                          cwd=REPO, capture_output=True, text=True, check=True, timeout=HANG_SECONDS)
    return done.stdout.strip()


def claimed_job(deployed, claimant: str) -> uuid.UUID:
    """A job of the deployed engine, committed, then claimed by ``claimant`` (no message on any queue)."""
    with session_scope() as session:
        job = job_repo.add(session, Job(
            tenant_id=uuid.UUID(deployed.admin.tenant_id), engine_id=uuid.UUID(deployed.engine_id),
            engine_name="Loan quote", engine_slug=deployed.engine_slug, version_id=uuid.UUID(deployed.version_id),
            version="1.0", consumer_id=uuid.UUID(deployed.consumer_id), consumer_name="Pricing app",
            status=JobStatus.PENDING, inputs=INPUTS,
        ))
        _, claimed = job_repo.claim_many(session, job_ids=[job.id], lease_seconds=LEASE, claimant=claimant)
        assert [c.id for c in claimed] == [job.id]
        return job.id


def job_row(job_id) -> Job:
    with session_scope() as session:
        job = session.get(Job, job_id)
        session.expunge(job)
        return job


def test_a_claim_records_the_process_that_holds_it(deployed):
    job_id = claimed_job(deployed, claimants.current())
    job = job_row(job_id)
    assert job.claimant == claimants.current()
    held = claimants.parse(job.claimant)
    assert held.place == claimants.here() and held.pid == os.getpid()


def test_the_jobs_of_a_process_that_is_gone_are_handed_back_and_computed_at_once(deployed, run_worker, local_aws):
    run_worker()
    # GIVEN a job claimed a moment ago (well within its lease) by a process that has since ended
    job_id = claimed_job(deployed, claimant_of_a_process_that_ended())
    assert job_row(job_id).status == JobStatus.PROCESSING
    # WHEN the dev stack starts again (it hands back such claims before its workers run)
    released = dead_claims.release()
    # THEN the job is pending again, no longer claimed, and its message is queued under its tenant's group
    job = job_row(job_id)
    assert released == 1 and (job.status, job.claimant, job.started_at) == (JobStatus.PENDING, None, None)
    sqs = client("sqs")
    got = sqs.receive_message(QueueUrl=local_aws.jobs_queue_url, MaxNumberOfMessages=10, VisibilityTimeout=0,
                              MessageSystemAttributeNames=["MessageGroupId"]).get("Messages", [])
    assert [(json.loads(m["Body"])["job_id"], m["Attributes"]["MessageGroupId"]) for m in got] == [(str(job_id), deployed.admin.tenant_id)]
    # AND the worker computes it now, not a lease later
    run_worker()
    assert job_row(job_id).status == JobStatus.COMPLETED


def test_every_sweep_hands_back_claims_of_processes_that_are_gone(deployed, run_worker):
    run_worker()
    job_id = claimed_job(deployed, claimant_of_a_process_that_ended())
    assert sweeper.sweep().jobs == 1
    run_worker()
    assert job_row(job_id).status == JobStatus.COMPLETED


def test_claims_of_a_live_process_or_of_another_machine_are_left_to_their_lease(deployed):
    # GIVEN a job claimed by this (live) process, one by a process of another machine, one by a
    # process of another boot of this machine, and one whose claimant cannot be read
    here = claimants.parse(claimants.current())
    elsewhere = claimants.Claimant("another-host", here.pidns, here.boot, 1234567, "42")
    other_boot = claimants.Claimant(here.host, here.pidns, str(uuid.uuid4()), 1234567, "42")
    jobs = [claimed_job(deployed, str(c)) for c in (here, elsewhere, other_boot, "not a claimant")]
    # WHEN claims of processes that are gone are handed back
    assert dead_claims.release() == 0
    # THEN all four stay processing, claimed as they were
    assert {job_row(job_id).status for job_id in jobs} == {JobStatus.PROCESSING}


def test_a_pid_now_used_by_another_process_is_not_mistaken_for_the_claimant():
    me = claimants.parse(claimants.current())
    # GIVEN this process's pid, recorded by a process that started at another time
    earlier = claimants.Claimant(me.host, me.pidns, me.boot, me.pid, str(int(me.start) - 1))
    # THEN that claimant is gone, while this process is not
    assert claimants.gone(str(earlier)) and not claimants.gone(str(me))


def test_a_process_that_ended_but_was_not_yet_reaped_is_gone():
    # GIVEN a child that printed its claimant and exited, not yet waited for (a zombie)
    child = subprocess.Popen([sys.executable, "-c", "from shared import claimants; print(claimants.current())"],
                             cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        claimant = child.stdout.read().strip()
        pid = claimants.parse(claimant).pid
        deadline = time.monotonic() + HANG_SECONDS
        while Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
            assert time.monotonic() < deadline, "the child did not end"
            time.sleep(0.01)
        # THEN it is gone, though its pid is still taken
        assert claimants.gone(claimant)
    finally:
        child.wait(HANG_SECONDS)
        child.stdout.close()


def test_what_is_not_a_claimant_is_never_gone():
    assert not claimants.gone(None) and not claimants.gone("") and not claimants.gone("a|b|c|x|y")
