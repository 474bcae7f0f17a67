"""The worker takes a batch of job messages at once: one claim, one loaded model per version, one
finish; a job that fails transiently is handed back alone, and a job already handled stays as it is."""

from __future__ import annotations

import json
import uuid

import pytest

from shared.errors import ServiceUnavailable
from shared.repositories import jobs as job_repo
from shared.services import job_runner
from tests.factories import submit_job
from tests.stats.rollups_check import assert_rollups_exact
from tests.worker.test_redelivery_and_webhooks import annuity, job_row, sqs_event

LOANS = [{"principal": 1000 * (n + 1), "annual_rate": 0.01 * (n + 1), "years": n + 1} for n in range(10)]


@pytest.fixture()
def handler():
    from functions.worker.app import handler

    return handler


@pytest.fixture()
def watched(monkeypatch):
    """Counts of the batch's claims and model checkouts, and the jobs calculated, in order."""
    seen = {"claims": [], "checkouts": 0, "calculated": []}
    claim_many, calculate_jobs, calculate = job_repo.claim_many, job_runner.calculate_jobs, job_runner._calculate

    def count_claims(session, *, job_ids, lease_seconds, **more):
        seen["claims"].append(len(job_ids))
        return claim_many(session, job_ids=job_ids, lease_seconds=lease_seconds, **more)

    def count_checkouts(version, jobs, **options):
        seen["checkouts"] += 1  # one hand-over of the version's jobs to the fenced child
        return calculate_jobs(version, jobs, **options)

    def note(job, version, workbook):
        seen["calculated"].append(str(job.id))
        return calculate(job, version, workbook)

    monkeypatch.setattr(job_repo, "claim_many", count_claims)
    monkeypatch.setattr(job_runner, "calculate_jobs", count_checkouts)
    monkeypatch.setattr(job_runner, "_calculate", note)
    monkeypatch.setattr(job_repo, "claim_for_processing", None)  # the batch path never claims one by one
    return seen


def failing_for(monkeypatch, job_id: str, error: Exception) -> None:
    """Make the calculation of one job raise ``error``; the others calculate as usual."""
    calculate = job_runner._calculate

    def calculate_unless_that_job(job, version, workbook):
        if str(job.id) == job_id:
            raise error
        return calculate(job, version, workbook)

    monkeypatch.setattr(job_runner, "_calculate", calculate_unless_that_job)


def test_ten_jobs_are_claimed_once_and_calculated_on_one_model(deployed, handler, watched):
    # GIVEN ten queued jobs of one version
    ids = [submit_job(deployed, loan) for loan in LOANS]
    # WHEN their ten messages come as one batch
    assert handler(sqs_event(*ids), None) == {"batchItemFailures": []}
    # THEN one claim took them all and one checkout of the model served them all
    assert (watched["claims"], watched["checkouts"]) == ([10], 1)
    assert sorted(watched["calculated"]) == sorted(ids)
    # AND each has its own answer (Excel's PMT, by the annuity formula it documents)
    for job_id, loan in zip(ids, LOANS):
        job = job_row(job_id)
        assert job.status == "completed" and job.execution_time_ms is not None
        assert job.outputs["monthly_payment"] == pytest.approx(annuity(**loan), rel=1e-12)
    assert_rollups_exact(deployed.admin.tenant_id)


def test_a_batch_reads_of_its_version_what_a_calculation_needs_not_its_reports(deployed, handler, monkeypatch):
    from sqlalchemy import inspect

    # GIVEN a queued job, and the version each calculation is given noted
    seen = []
    calculate = job_runner._calculate
    monkeypatch.setattr(job_runner, "_calculate", lambda job, version, workbook: seen.append(version) or calculate(job, version, workbook))
    job_id = submit_job(deployed, LOANS[0])

    # WHEN its message is handled
    assert handler(sqs_event(job_id), None) == {"batchItemFailures": []}

    # THEN the job completed on its version, whose fidelity report and document storage (JSON,
    # possibly large, never used by a calculation) were not read from the database
    assert job_row(job_id).status == "completed"
    [version] = seen
    assert str(version.id) == deployed.version_id
    assert {"fidelity_report", "document_storage"} <= inspect(version).unloaded
    assert version.named_ranges and version.workbook_key


def test_a_transient_failure_hands_back_only_its_job(deployed, handler, monkeypatch):
    ids = [submit_job(deployed, loan) for loan in LOANS[:3]]
    failing_for(monkeypatch, ids[1], ServiceUnavailable("Storage is not available"))
    event = sqs_event(*ids)
    # WHEN the second job's calculation meets an outage
    result = handler(event, None)
    # THEN only its record is reported failed, it is pending again, and the others are completed
    assert result == {"batchItemFailures": [{"itemIdentifier": event["Records"][1]["messageId"]}]}
    assert [job_row(j).status for j in ids] == ["completed", "pending", "completed"]
    # AND its redelivery completes it, the others' redelivery changing nothing
    monkeypatch.undo()
    before = job_row(ids[0]).completed_at
    assert handler(sqs_event(*ids, receive_count=2), None) == {"batchItemFailures": []}
    assert [job_row(j).status for j in ids] == ["completed"] * 3
    assert job_row(ids[0]).completed_at == before
    assert_rollups_exact(deployed.admin.tenant_id)


def test_a_job_that_cannot_be_calculated_fails_alone(deployed, handler, monkeypatch):
    ids = [submit_job(deployed, loan) for loan in LOANS[:3]]
    failing_for(monkeypatch, ids[0], ValueError("internal detail"))
    assert handler(sqs_event(*ids), None) == {"batchItemFailures": []}
    first = job_row(ids[0])
    assert (first.status, first.error_message, first.execution_time_ms) == ("failed", job_runner.CALCULATION_FAILED, None)
    assert [job_row(j).status for j in ids[1:]] == ["completed", "completed"]
    assert_rollups_exact(deployed.admin.tenant_id)


def test_handled_unknown_duplicate_and_malformed_messages_in_one_batch(deployed, handler, watched):
    # GIVEN a finished job, a new one, a job nobody knows, the new one again and a malformed body
    done = submit_job(deployed, LOANS[0])
    assert handler(sqs_event(done), None) == {"batchItemFailures": []}
    finished = job_row(done)
    new = submit_job(deployed, LOANS[1])
    event = sqs_event(done, new, uuid.uuid4(), new, uuid.uuid4())
    event["Records"][4]["body"] = "not json"
    watched["calculated"].clear()
    # WHEN they come as one batch
    assert handler(event, None) == {"batchItemFailures": []}
    # THEN only the new job is calculated, once, and the finished one is untouched
    assert watched["calculated"] == [new]
    assert job_row(new).status == "completed"
    assert job_row(done).updated_at == finished.updated_at


def test_a_batch_whose_finish_cannot_be_written_comes_again_whole_and_is_computed_then(deployed, handler, monkeypatch):
    ids = [submit_job(deployed, loan) for loan in LOANS[:2]]

    def database_refuses(session, **_):
        raise ServiceUnavailable("Database is not available")

    # GIVEN a finish the database refuses once (the claim and the calculation went through)
    monkeypatch.setattr(job_repo, "finish_many", database_refuses)
    event = sqs_event(*ids)
    result = handler(event, None)
    # THEN every record comes again, and the jobs are handed back rather than left claimed
    # (claimed, the redelivery would skip them until their 15-minute lease ran out)
    assert result == {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"]]}
    assert [job_row(j).status for j in ids] == ["pending", "pending"]

    # WHEN the batch is redelivered with the database writing again
    monkeypatch.undo()
    assert handler(sqs_event(*ids, receive_count=2), None) == {"batchItemFailures": []}
    # THEN both jobs are computed and counted once
    assert [job_row(j).status for j in ids] == ["completed", "completed"]
    assert_rollups_exact(deployed.admin.tenant_id)


def test_a_batch_whose_finish_and_hand_back_both_fail_stays_claimed_for_its_lease(deployed, handler, monkeypatch):
    ids = [submit_job(deployed, loan) for loan in LOANS[:2]]

    def database_down(session, **_):
        raise ServiceUnavailable("Database is not available")

    # GIVEN a database that goes down after the claim: the finish and the hand-back both fail
    monkeypatch.setattr(job_repo, "finish_many", database_down)
    monkeypatch.setattr(job_repo, "release_claim", database_down)
    event = sqs_event(*ids)
    result = handler(event, None)
    # THEN every record comes again and the jobs stay claimed until their lease runs out
    assert result == {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"]]}
    assert [job_row(j).status for j in ids] == ["processing", "processing"]


def test_a_version_check_in_the_jobs_batch_is_moved(deployed, handler, monkeypatch):
    moved = []
    monkeypatch.setattr("functions.worker.app.queues.enqueue_version_check", moved.append)
    job_id = submit_job(deployed, LOANS[0])
    event = sqs_event(job_id, job_id)
    event["Records"][1]["body"] = json.dumps({"version_id": deployed.version_id})
    assert handler(event, None) == {"batchItemFailures": []}
    assert moved == [uuid.UUID(deployed.version_id)] and job_row(job_id).status == "completed"


def test_a_batch_finish_leaves_a_job_whose_claim_was_lost(deployed):
    from shared.db.session import session_scope

    # GIVEN two jobs claimed together, one of them then taken over by another worker (its claim looked stale)
    ids = [uuid.UUID(submit_job(deployed, loan)) for loan in LOANS[:2]]
    with session_scope() as s:
        claimed_at, claimed = job_repo.claim_many(s, job_ids=ids, lease_seconds=300)
    assert {job.id for job in claimed} == set(ids)
    with session_scope() as s:
        taken_over = job_repo.claim_for_processing(s, job_id=ids[1], lease_seconds=-1)
    # WHEN the first worker finishes both
    with session_scope() as s:
        outcome = dict(status="completed", outputs={"monthly_payment": 1.0}, execution_time_ms=3)
        finished = job_repo.finish_many(s, claimed_at=claimed_at, outcomes=[(ids[0], outcome), (ids[1], outcome)])
    # THEN only the job it still held is finished and counted; the other is the new claimant's
    assert finished == {ids[0]}
    assert (job_row(ids[0]).status, job_row(ids[1]).status) == ("completed", "processing")
    assert job_row(ids[1]).started_at == taken_over
    assert_rollups_exact(deployed.admin.tenant_id)
