"""Shadow replays: the active version's recorded production jobs calculated again on a candidate
and compared, output by output; nothing of a replay is seen by consumers or counted anywhere."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import func, select

from shared.db.models import Job, JobStatus, Replay, TestCase
from shared.db.session import session_scope
from shared.services import replay_runner, replays
from shared.services.output_compare import Tolerance
from tests.factories import submit_job
from tests.replays.helpers import edited, upload
from tests.worker.test_redelivery_and_webhooks import sqs_event

LOANS = [{"principal": 1000 * (n + 1), "annual_rate": 0.01 * (n + 1), "years": n + 1} for n in range(12)]


@pytest.fixture()
def recorded(deployed):
    """Twelve completed production jobs of the active version, calculated by the worker."""
    from functions.worker.app import handler

    ids = [submit_job(deployed, loan) for loan in LOANS]
    assert handler(sqs_event(*ids), None) == {"batchItemFailures": []}
    return ids


def plus_100(book):
    book["Quote"]["B10"] = "=monthly_payment*years*12+100"  # total paid (and so total interest) up by 100


def ask(deployed, version_id, count=1000, tolerance=None) -> uuid.UUID:
    with session_scope() as session:
        return replays.create(session, tenant_id=uuid.UUID(deployed.admin.tenant_id), engine_id=uuid.UUID(deployed.engine_id),
                              version_id=uuid.UUID(version_id), count=count, tolerance=tolerance).id


def row(replay_id) -> Replay:
    with session_scope() as session:
        replay = session.get(Replay, replay_id)
        session.expunge(replay)
        return replay


def replayed(deployed, version_id, **options) -> Replay:
    replay_id = ask(deployed, version_id, **options)
    assert replay_runner.run(replay_id) == "completed"
    return row(replay_id)


def test_the_same_workbook_replays_identical(deployed, recorded, loan_xlsx):
    # GIVEN a candidate uploaded from the active version's own workbook
    candidate = upload(deployed, loan_xlsx, "2.0")
    # WHEN the twelve recorded jobs are replayed on it
    replay = replayed(deployed, candidate)
    # THEN every case is identical, output by output
    report = replay.report
    assert (replay.status, replay.total, replay.processed) == ("completed", 12, 12)
    assert {k: report[k] for k in ("total", "identical", "within", "changed", "failed")} == {
        "total": 12, "identical": 12, "within": 0, "changed": 0, "failed": 0}
    assert report["outputs"]["monthly_payment"]["identical"] == 12
    assert report["most_changed"] == [] and report["failures"] == []


def test_a_changed_formula_is_counted_per_output_with_its_distribution(deployed, recorded, loan_xlsx):
    # GIVEN a candidate whose total paid is 100 more than the active version's, for every loan
    candidate = upload(deployed, edited(loan_xlsx, plus_100), "2.0")
    # WHEN replayed exactly (the default tolerance)
    report = replayed(deployed, candidate).report
    # THEN every case changed: total paid and total interest moved by 100, the payment did not
    assert (report["identical"], report["within"], report["changed"]) == (0, 0, 12)
    outputs = report["outputs"]
    assert outputs["monthly_payment"]["identical"] == 12
    for name in ("total_paid", "total_interest"):
        spread = outputs[name]["differences"]
        assert outputs[name]["changed"] == 12 and spread["count"] == 12 and spread["numeric"] == 12
        assert spread["min"] == pytest.approx(100) and spread["max"] == pytest.approx(100) and spread["median"] == pytest.approx(100)
        assert outputs[name]["tolerance"] == {"absolute": None, "relative": None, "source": "request"}
    # AND the most changed cases carry their inputs and both outputs
    case = report["most_changed"][0]
    assert len(report["most_changed"]) == 12 and case["verdict"] == "changed"
    assert sorted(case["outputs_moved"]) == ["total_interest", "total_paid"]
    assert case["candidate"]["total_paid"] - case["recorded"]["total_paid"] == pytest.approx(100)
    assert case["inputs"] in LOANS


def test_the_requests_tolerance_and_the_test_cases_decide_within(deployed, recorded, loan_xlsx):
    candidate = upload(deployed, edited(loan_xlsx, plus_100), "2.0")
    # GIVEN a test case that lets total paid move by 150
    with session_scope() as session:
        session.add(TestCase(tenant_id=uuid.UUID(deployed.admin.tenant_id), engine_id=uuid.UUID(deployed.engine_id), name="paid",
                             inputs=LOANS[0], expected={}, tolerances={"total_paid": {"absolute": 150}}, enabled=True))
    # WHEN replayed exactly otherwise
    report = replayed(deployed, candidate).report
    # THEN total paid is within (by the test case), total interest changed (exact)
    assert (report["outputs"]["total_paid"]["within"], report["outputs"]["total_interest"]["changed"]) == (12, 12)
    assert report["outputs"]["total_paid"]["tolerance"] == {"absolute": 150, "relative": None, "source": "test_cases"}
    assert report["changed"] == 12
    # AND with a relative tolerance asked for the rest, the interest is within where 100 is small enough
    loose = replayed(deployed, candidate, tolerance=Tolerance(relative=0.5)).report
    interest = loose["outputs"]["total_interest"]
    # |100| <= 0.5 * interest: the loans whose interest is at least 200
    from tests.worker.test_redelivery_and_webhooks import annuity
    big = sum(1 for loan in LOANS if annuity(**loan) * loan["years"] * 12 - loan["principal"] >= 200)
    assert 0 < big < 12 and (interest["within"], interest["changed"]) == (big, 12 - big)
    assert (loose["within"], loose["changed"]) == (big, 12 - big)


def test_only_the_last_n_completed_production_jobs_are_replayed(deployed, recorded, loan_xlsx):
    # GIVEN among the twelve, newest first, a failed job and a test key's job
    with session_scope() as session:
        newest = session.scalars(select(Job).where(Job.engine_id == uuid.UUID(deployed.engine_id)).order_by(Job.created_at.desc(), Job.id.desc())).all()
        newest[0].status = JobStatus.FAILED
        newest[2].is_test = True
        production = [str(job.id) for job in newest if job.status == JobStatus.COMPLETED and not job.is_test]
    # WHEN five are asked for, THEN the five newest completed production jobs are replayed
    replay = replayed(deployed, upload(deployed, loan_xlsx, "2.0"), count=5)
    assert replay.total == 5 and replay.report["total"] == 5
    assert replay.job_ids == production[:5] and str(newest[0].id) not in replay.job_ids and str(newest[2].id) not in replay.job_ids


def test_a_long_replay_is_handed_on_and_reports_the_same(deployed, recorded, loan_xlsx):
    candidate = upload(deployed, edited(loan_xlsx, plus_100), "2.0")
    in_one_go = replayed(deployed, candidate).report
    # WHEN a replay's message has no time left after each chunk of 5
    replay_id = ask(deployed, candidate)
    assert replay_runner.run(replay_id, within_s=0, chunk_size=5) == "handed_on"
    assert (row(replay_id).processed, row(replay_id).status) == (5, "running")
    assert replay_runner.run(replay_id, within_s=0, chunk_size=5) == "handed_on"
    assert replay_runner.run(replay_id, within_s=0, chunk_size=5) == "completed"
    # THEN the report is the one made in one go
    assert row(replay_id).report == in_one_go


def test_a_replay_waits_while_its_tenant_has_no_room(deployed, recorded, loan_xlsx, configure):
    # GIVEN a cap of one worker per tenant and one of the tenant's jobs processing
    configure(tenant_max_concurrent_jobs=1, tenant_cap_retry_seconds=0)
    replay_id = ask(deployed, upload(deployed, loan_xlsx, "2.0"))
    busy = submit_job(deployed, LOANS[0])
    with session_scope() as session:
        from shared.repositories import jobs as job_repo

        job_repo.claim_many(session, job_ids=[uuid.UUID(busy)], lease_seconds=900)
    try:
        # WHEN the replay's message comes, THEN it is queued again, untouched
        assert replay_runner.run(replay_id) == "deferred"
        assert (row(replay_id).status, row(replay_id).processed) == ("queued", 0)
    finally:
        with session_scope() as session:
            session.get(Job, uuid.UUID(busy)).status = JobStatus.FAILED
    # AND once the job is done it runs
    assert replay_runner.run(replay_id) == "completed"


def test_a_second_message_for_a_running_replay_is_a_no_op(deployed, recorded, loan_xlsx):
    from shared.repositories import replays as repo

    replay_id = ask(deployed, upload(deployed, loan_xlsx, "2.0"))
    with session_scope() as session:
        assert repo.claim(session, replay_id=replay_id, lease_seconds=900) is not None
    assert replay_runner.run(replay_id) is None


def test_replays_make_no_jobs_and_change_no_list_or_statistic(deployed, recorded, loan_xlsx):
    admin = deployed.admin
    candidate = upload(deployed, edited(loan_xlsx, plus_100), "2.0")
    paths = [f"/engines/{deployed.engine_id}/jobs", f"/engines/{deployed.engine_id}/jobs/recent", "/tenant/stats",
             f"/engines/{deployed.engine_id}/stats", f"/consumers/{deployed.consumer_id}/stats"]

    def seen():
        with session_scope() as session:
            jobs = sorted(str(j) for j in session.scalars(select(Job.id).where(Job.tenant_id == uuid.UUID(admin.tenant_id))))
        pages = [admin.get(path).json() for path in paths]
        return jobs, pages

    before = seen()
    replay = replayed(deployed, candidate)
    assert replay.report["changed"] == 12
    # THEN no job row was made, and every list and statistic reads as before
    assert seen() == before
    # AND the consumer's GET /jobs/{id} knows nothing of the replay's id
    r = admin.client.get(f"/jobs/{replay.id}", headers={"X-API-Key": deployed.api_key})
    assert r.status_code == 404


def test_a_replay_with_nothing_to_replay_completes_at_once(deployed, loan_xlsx):
    replay = row(ask(deployed, upload(deployed, loan_xlsx, "2.0")))
    assert (replay.status, replay.total, replay.report["total"]) == ("completed", 0, 0)


def test_latest_summary_is_the_last_completed_replays_counts(deployed, recorded, loan_xlsx):
    candidate = upload(deployed, edited(loan_xlsx, plus_100), "2.0")
    with session_scope() as session:
        assert replays.latest_summary(session, tenant_id=uuid.UUID(deployed.admin.tenant_id), version_id=uuid.UUID(candidate)) is None
    replay = replayed(deployed, candidate)
    with session_scope() as session:
        s = replays.latest_summary(session, tenant_id=uuid.UUID(deployed.admin.tenant_id), version_id=uuid.UUID(candidate))
    assert s["replay_id"] == str(replay.id) and (s["total"], s["changed"], s["identical"]) == (12, 12, 0)
    assert s["baseline_version"] == "1.0"


def test_activating_a_replayed_version_records_the_replay_in_its_release(deployed, recorded, loan_xlsx):
    # GIVEN a candidate replayed against the active version's recorded jobs
    candidate = upload(deployed, edited(loan_xlsx, plus_100), "2.0")
    replay = replayed(deployed, candidate)
    # WHEN it is activated
    base = f"/engines/{deployed.engine_id}"
    assert deployed.admin.post(f"{base}/versions/{candidate}/activate").status_code == 200
    # THEN its release carries what the replay found
    release = deployed.admin.get(f"{base}/releases").json()[0]
    assert release["version_id"] == candidate
    assert release["replay"]["replay_id"] == str(replay.id)
    assert (release["replay"]["total"], release["replay"]["changed"]) == (12, 12)
