"""Batches: many input sets in one call, one job per valid set, results in order, one webhook."""

from __future__ import annotations

import io
import json
import uuid
from datetime import timedelta

import httpx
import openpyxl
import pytest
from sqlalchemy import func, select

from shared.db.models import Job
from shared.db.session import session_scope
from shared.db.types import utcnow
from shared.errors import ServiceUnavailable
from shared.services import batch_runner, batches, job_runner, job_waits
from tests.factories import ALL_PERMISSIONS, deploy_loan, make_admin
from tests.receiver import WebhookReceiver


def annuity(principal, annual_rate, years):
    # Excel's PMT for a loan paid monthly (PMT's documented formula with fv = 0, type = 0).
    r, n = annual_rate / 12, years * 12
    return principal * r / (1 - (1 + r) ** -n)


SETS = [
    {"principal": 250000, "annual_rate": 0.045, "years": 30},
    {"principal": [1, 2], "annual_rate": 0.05, "years": 10},  # a list for a one-cell input
    {"principal": 120000, "annual_rate": 0.05, "years": 15},
    7,  # not an object
    {"principal": 90000, "annual_rate": 0.06, "years": 5, "start_date": "2027-03-15"},
]


def key(deployed) -> dict:
    return {"X-API-Key": deployed.api_key}


def batch_path(deployed) -> str:
    return f"/jobs/batch/{deployed.admin.slug}/{deployed.engine_slug}"


def submit(client, deployed, sets=SETS, **extra) -> dict:
    r = client.post(batch_path(deployed), json={"inputs": sets, **extra}, headers=key(deployed))
    assert r.status_code == 202, r.text
    return r.json()


def result_lines(client, deployed, batch_id) -> list[dict]:
    r = client.get(f"/jobs/batch/{batch_id}/results", headers=key(deployed))
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in r.text.splitlines()]


@pytest.fixture()
def small_chunks(configure):
    configure(batch_chunk_size=2)


def test_invalid_input_sets_are_reported_by_index_and_get_no_job(client, deployed):
    body = submit(client, deployed)
    assert body["total"] == 5 and body["jobs"] == 3
    assert body["counts"] == {"pending": 3, "processing": 0, "completed": 0, "failed": 0, "invalid": 2}
    assert body["invalid"] == [
        {"index": 1, "error": "Input validation failed: 'principal' expects a single value, not a list"},
        {"index": 3, "error": batches.NOT_AN_OBJECT},
    ]
    with session_scope() as session:
        indexes = session.scalars(select(Job.batch_index).where(Job.batch_id == uuid.UUID(body["batch_id"])).order_by(Job.batch_index))
        assert list(indexes) == [0, 2, 4]


def test_results_are_complete_and_in_order(client, deployed, run_worker, small_chunks):
    body = submit(client, deployed)
    # WHEN the worker has run every chunk (three messages of two indexes each)
    assert run_worker() == 3
    status = client.get(f"/jobs/batch/{body['batch_id']}", headers=key(deployed)).json()
    assert status["done"] is True and status["completed_at"] is not None
    assert status["counts"] == {"pending": 0, "processing": 0, "completed": 3, "failed": 0, "invalid": 2}
    # THEN there is one line per input set, in order, with Excel's answers
    lines = result_lines(client, deployed, body["batch_id"])
    assert [line["index"] for line in lines] == [0, 1, 2, 3, 4]
    assert [line["status"] for line in lines] == ["completed", "invalid", "completed", "invalid", "completed"]
    for line, given in zip(lines[::2], SETS[::2]):
        assert line["outputs"]["monthly_payment"] == pytest.approx(annuity(given["principal"], given["annual_rate"], given["years"]), rel=1e-12)
        assert uuid.UUID(line["job_id"])
    assert lines[4]["outputs"]["end_date"] == "2032-03-15"  # EDATE(start_date, 60)
    assert lines[1] == {"index": 1, "job_id": None, "status": "invalid", "error": body["invalid"][0]["error"]}


def test_a_batch_job_is_an_ordinary_job(client, deployed, run_worker):
    body = submit(client, deployed, sets=[SETS[0]])
    run_worker()
    job_id = result_lines(client, deployed, body["batch_id"])[0]["job_id"]
    job = client.get(f"/jobs/{job_id}", headers=key(deployed)).json()
    assert job["status"] == "completed" and job["inputs"] == SETS[0]
    assert job["outputs"]["total_paid"] == pytest.approx(annuity(250000, 0.045, 30) * 360, rel=1e-12)


def test_results_before_the_worker_runs_say_pending(client, deployed):
    body = submit(client, deployed, sets=SETS[:2])
    lines = result_lines(client, deployed, body["batch_id"])
    assert [(line["index"], line["status"]) for line in lines] == [(0, "pending"), (1, "invalid")]
    assert client.get(f"/jobs/batch/{body['batch_id']}", headers=key(deployed)).json()["done"] is False


def test_the_results_workbook_has_a_row_per_input_set(client, deployed, run_worker):
    body = submit(client, deployed)
    run_worker()
    r = client.get(f"/jobs/batch/{body['batch_id']}/results?format=xlsx", headers=key(deployed))
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/vnd.openxmlformats")
    rows = list(openpyxl.load_workbook(io.BytesIO(r.content)).active.iter_rows(values_only=True))
    header = rows[0]
    assert header[:4] == ("index", "principal", "annual_rate", "years")
    assert header[-2:] == ("status", "error") and "monthly_payment" in header and "schedule" in header
    assert [row[0] for row in rows[1:]] == [0, 1, 2, 3, 4]
    first = dict(zip(header, rows[1]))
    assert first["principal"] == 250000 and first["status"] == "completed"
    assert first["monthly_payment"] == pytest.approx(annuity(250000, 0.045, 30), rel=1e-12)
    # A multi-cell output is JSON text in its cell: the schedule's first month pays interest on the principal.
    schedule = json.loads(first["schedule"])
    assert schedule[0][0] == 1 and schedule[0][2] == pytest.approx(250000 * 0.045 / 12, rel=1e-12)
    refused = dict(zip(header, rows[2]))
    assert refused["status"] == "invalid" and refused["error"].startswith("Input validation failed")


def test_text_is_never_a_formula_in_the_results_workbook(client, deployed, run_worker):
    body = submit(client, deployed, sets=[{**SETS[0], "note": "=HYPERLINK(\"http://x\")"}])
    run_worker()
    r = client.get(f"/jobs/batch/{body['batch_id']}/results?format=xlsx", headers=key(deployed))
    sheet = openpyxl.load_workbook(io.BytesIO(r.content)).active
    header = [c.value for c in sheet[1]]
    cell = sheet.cell(2, header.index("note") + 1)
    assert cell.data_type == "s" and cell.value == "=HYPERLINK(\"http://x\")"


def test_one_webhook_when_the_whole_batch_is_done(client, deployed, run_worker, small_chunks):
    with WebhookReceiver(status=200) as receiver:
        body = submit(client, deployed, webhook_url=receiver.url)
        run_worker()
        # WHEN every chunk message is delivered again
        for chunk in range(3):
            assert batch_runner.run_chunk(uuid.UUID(body["batch_id"]), chunk) == 0
        got = receiver.wait_for(2, timeout=1.0)
    assert len(got) == 1
    event = got[0]["json"]
    assert event["batch_id"] == body["batch_id"] and event["status"] == "completed"
    assert event["counts"] == {"pending": 0, "processing": 0, "completed": 3, "failed": 0, "invalid": 2}
    status = client.get(f"/jobs/batch/{body['batch_id']}", headers=key(deployed)).json()
    assert status["webhook_response_status"] == 200 and status["webhook_sent_at"] is not None
    # It is signed as a job's webhook is, with the tenant's secret, and names its batch
    from tests.worker.test_webhook_signing import python_verify, read_secret

    headers = {name.lower(): value for name, value in got[0]["headers"].items()}
    assert headers["sheetcalc-batch-id"] == body["batch_id"]
    assert python_verify(read_secret(deployed.admin), headers["sheetcalc-signature"], got[0]["raw"]) is True


def test_a_redelivered_chunk_computes_nothing_again(client, deployed, run_worker):
    body = submit(client, deployed, sets=[SETS[0], SETS[2]])
    run_worker()
    before = result_lines(client, deployed, body["batch_id"])
    with session_scope() as session:
        finished = dict(session.execute(select(Job.id, Job.completed_at).where(Job.batch_id == uuid.UUID(body["batch_id"]))).all())
    assert batch_runner.run_chunk(uuid.UUID(body["batch_id"]), 0) == 0
    with session_scope() as session:
        again = dict(session.execute(select(Job.id, Job.completed_at).where(Job.batch_id == uuid.UUID(body["batch_id"]))).all())
    assert again == finished and result_lines(client, deployed, body["batch_id"]) == before


def test_more_than_ten_thousand_sets_are_refused(client, deployed):
    r = client.post(batch_path(deployed), json={"inputs": [{"years": 1}] * 10_001}, headers=key(deployed))
    assert r.status_code == 413
    assert r.json() == {"detail": "A batch holds at most 10,000 input sets; this one has 10,001"}
    with session_scope() as session:
        assert session.scalar(select(func.count()).select_from(Job).where(Job.tenant_id == uuid.UUID(deployed.admin.tenant_id))) == 0


def test_an_empty_batch_is_400(client, deployed):
    r = client.post(batch_path(deployed), json={"inputs": []}, headers=key(deployed))
    assert r.status_code == 400 and r.json() == {"detail": batches.EMPTY}


def test_a_batch_needs_execute_permission(client, admin, loan_xlsx):
    deployed = deploy_loan(admin, loan_xlsx, flags={**ALL_PERMISSIONS, "can_execute": False})
    r = client.post(batch_path(deployed), json={"inputs": [SETS[0]]}, headers=key(deployed))
    assert r.status_code == 403 and r.json() == {"detail": "Consumer does not have execute permission for this engine"}


def test_a_test_key_cannot_send_a_batch(client, deployed):
    r = client.post(batch_path(deployed), json={"inputs": [SETS[0]]}, headers={"X-API-Key": deployed.test_key})
    assert r.status_code == 401


def test_a_batch_is_its_tenants_and_consumers_own(client, deployed, loan_xlsx):
    body = submit(client, deployed, sets=[SETS[0]])
    # GIVEN another tenant's consumer, and another consumer of the same engine
    stranger = deploy_loan(make_admin(client), loan_xlsx)
    neighbour = deploy_loan(deployed.admin, loan_xlsx)
    for path in (f"/jobs/batch/{body['batch_id']}", f"/jobs/batch/{body['batch_id']}/results"):
        # THEN the other tenant learns nothing, and the other consumer is refused
        assert client.get(path, headers=key(stranger)).json() == {"detail": "Batch not found"}
        assert client.get(path, headers=key(stranger)).status_code == 404
        assert client.get(path, headers=key(neighbour)).status_code == 403
    assert client.get(f"/jobs/batch/{uuid.uuid4()}", headers=key(deployed)).status_code == 404


def sqs_event(body: dict) -> dict:
    """One SQS record as Lambda hands it over."""
    return {"Records": [{
        "messageId": str(uuid.uuid4()), "receiptHandle": "rh", "body": json.dumps(body),
        "attributes": {"ApproximateReceiveCount": "1"}, "messageAttributes": {}, "md5OfBody": "",
        "eventSource": "aws:sqs", "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:sheetcalc-jobs", "awsRegion": "us-east-1",
    }]}


def test_a_storage_failure_hands_the_chunk_back_for_a_redelivery(client, deployed, monkeypatch):
    from functions.worker.app import handler

    body = submit(client, deployed, sets=[SETS[0], SETS[2]])
    batch_id = uuid.UUID(body["batch_id"])
    # WHEN the chunk's calculation meets an outage, the record is reported failed and the jobs are pending again
    with monkeypatch.context() as patched:
        patched.setattr(batch_runner, "_calculate", lambda jobs, version: (_ for _ in ()).throw(ServiceUnavailable("down")))
        answer = handler(sqs_event({"batch_id": str(batch_id), "chunk": 0}), None)
    assert len(answer["batchItemFailures"]) == 1
    assert client.get(f"/jobs/batch/{batch_id}", headers=key(deployed)).json()["counts"]["pending"] == 2
    # THEN the redelivery computes them
    assert handler(sqs_event({"batch_id": str(batch_id), "chunk": 0}), None) == {"batchItemFailures": []}
    assert client.get(f"/jobs/batch/{batch_id}", headers=key(deployed)).json()["counts"]["completed"] == 2


def test_a_chunk_whose_finish_cannot_be_written_is_handed_back_for_a_redelivery(client, deployed, monkeypatch):
    from functions.worker.app import handler
    from shared.repositories import batches as batch_repo

    body = submit(client, deployed, sets=[SETS[0], SETS[2]])
    batch_id = uuid.UUID(body["batch_id"])
    # WHEN the database refuses the chunk's finish, the record is reported failed and the jobs are
    # pending again (not left claimed until their 15-minute lease runs out)
    with monkeypatch.context() as patched:
        patched.setattr(batch_repo, "finish_chunk", lambda session, **_: (_ for _ in ()).throw(ServiceUnavailable("down")))
        answer = handler(sqs_event({"batch_id": str(batch_id), "chunk": 0}), None)
    assert len(answer["batchItemFailures"]) == 1
    assert client.get(f"/jobs/batch/{batch_id}", headers=key(deployed)).json()["counts"]["pending"] == 2
    # THEN the redelivery computes them
    assert handler(sqs_event({"batch_id": str(batch_id), "chunk": 0}), None) == {"batchItemFailures": []}
    assert client.get(f"/jobs/batch/{batch_id}", headers=key(deployed)).json()["counts"]["completed"] == 2


def test_a_dead_lettered_chunk_fails_its_jobs_and_finishes_the_batch(client, deployed):
    from functions.worker.dlq import handler

    with WebhookReceiver(status=204) as receiver:
        body = submit(client, deployed, sets=[SETS[0], SETS[1]], webhook_url=receiver.url)
        handler(sqs_event({"batch_id": body["batch_id"], "chunk": 0}), None)
        got = receiver.wait_for(1)
    lines = result_lines(client, deployed, body["batch_id"])
    assert [(line["status"], line["error"]) for line in lines] == [
        ("failed", "The job could not be processed"), ("invalid", body["invalid"][0]["error"]),
    ]
    assert len(got) == 1 and got[0]["json"]["counts"]["failed"] == 1


def test_a_batchs_jobs_count_in_the_statistics_as_jobs_one_by_one_would(client, deployed, run_worker, small_chunks, monkeypatch):
    from tests.stats.rollups_check import assert_rollups_exact

    # GIVEN a batch of which one job fails to calculate
    original = batch_runner._calculate

    def one_fails(jobs, version):
        outcomes = original(jobs, version)
        for job, outcome in zip(jobs, outcomes):
            if job.batch_index == 2:
                outcome.update(status="failed", outputs=None, error_message=job_runner.CALCULATION_FAILED)
        return outcomes

    monkeypatch.setattr(batch_runner, "_calculate", one_fails)
    submit(client, deployed)
    run_worker()
    # THEN the rollups hold what the tenant's jobs add up to, job by job
    got = assert_rollups_exact(deployed.admin.tenant_id)
    (row,) = got["job_stats_daily"].values()
    assert (row["total_calls"], row["completed_calls"], row["failed_calls"]) == (3, 2, 1)


def test_a_batch_of_refused_sets_only_is_done_at_once_and_calls_its_webhook(client, deployed, run_worker):
    with WebhookReceiver(status=200) as receiver:
        body = submit(client, deployed, sets=[7, {"principal": [1]}], webhook_url=receiver.url)
        assert body["jobs"] == 0 and body["counts"]["invalid"] == 2
        run_worker()
        got = receiver.wait_for(1)
    assert len(got) == 1 and got[0]["json"]["counts"]["invalid"] == 2
    assert client.get(f"/jobs/batch/{body['batch_id']}", headers=key(deployed)).json()["done"] is True


@pytest.mark.parametrize("message", [{"batch_id": "not-a-uuid"}, {"batch_id": str(uuid.uuid4()), "chunk": -1}, {"batch_id": str(uuid.uuid4()), "chunk": "0"}])
def test_a_malformed_chunk_message_is_dropped(message):
    from functions.worker.app import handler

    assert handler(sqs_event(message), None) == {"batchItemFailures": []}


def test_a_batch_job_is_reproducible_like_any_job(client, admin, run_worker):
    # GIVEN a batch on a workbook using TODAY and RAND
    from tests.api.test_reproducible_runs import VOLATILE_XLSX, created_at, excel_1900_serial

    volatile = deploy_loan(admin, VOLATILE_XLSX)
    body = submit(client, volatile, sets=[{"amount": 3}, {"amount": 3}])
    run_worker()
    first, second = (line["job_id"] for line in result_lines(client, volatile, body["batch_id"]))
    job = admin.get(f"/engines/{volatile.engine_id}/jobs/{first}").json()
    # THEN the job recorded what it was calculated from, TODAY is its creation date, each job draws its own RAND
    assert job["calc_engine"] == "ironcalc" and job["version_sha256"] is not None
    assert job["outputs"]["today"] == excel_1900_serial(created_at(job).date())
    assert job["outputs"]["rand"] != admin.get(f"/engines/{volatile.engine_id}/jobs/{second}").json()["outputs"]["rand"]
    # AND a re-run gives identical outputs
    rerun = admin.post(f"/engines/{volatile.engine_id}/jobs/{first}/rerun").json()
    assert (rerun["identical"], rerun["differing_outputs"]) == (True, [])


def test_a_batch_fits_the_tenants_quota_of_unfinished_jobs_or_is_refused(client, deployed, configure):
    # GIVEN a tenant allowed 3 unfinished jobs of batches
    configure(tenant_max_unfinished_batch_jobs=3)
    # WHEN a batch of more jobs than the quota is sent THEN it is refused outright
    over = client.post(batch_path(deployed), json={"inputs": [SETS[0]] * 4}, headers=key(deployed))
    assert over.status_code == 400
    assert over.json()["detail"] == (
        "A batch of 4 jobs is more than this tenant may have pending or processing at once (3); send smaller batches"
    )
    # WHEN one fills the quota (refused sets take no room) THEN the next waits for room (429)
    assert submit(client, deployed, sets=[SETS[0], 7, SETS[2], SETS[4]])["jobs"] == 3
    full = client.post(batch_path(deployed), json={"inputs": [SETS[0]]}, headers=key(deployed))
    assert full.status_code == 429 and full.headers["Retry-After"] == "10"


def test_a_batch_jobs_filled_workbook_is_downloadable(client, deployed, run_worker):
    body = submit(client, deployed, sets=[SETS[0]])
    run_worker()
    job_id = result_lines(client, deployed, body["batch_id"])[0]["job_id"]
    link = client.get(f"/jobs/{job_id}/download", headers=key(deployed))
    assert link.status_code == 200, link.text
    filled = openpyxl.load_workbook(io.BytesIO(httpx.get(link.json()["download_url"]).content), data_only=True)
    assert filled["Quote"]["B3"].value == 250000
    assert filled["Quote"]["B9"].value == pytest.approx(annuity(250000, 0.045, 30), rel=1e-12)


def test_a_finished_chunk_wakes_the_waiters_of_its_jobs(client, deployed, run_worker, monkeypatch):
    # GIVEN a batch, and the completion announcements GET /jobs/{id}?wait= waits for, recorded
    announced = []
    monkeypatch.setattr(job_waits, "announce", lambda ids: announced.extend(str(i) for i in ids))
    body = submit(client, deployed, sets=[SETS[0], SETS[2]])
    job_ids = [line["job_id"] for line in result_lines(client, deployed, body["batch_id"])]
    # WHEN the worker finishes the chunk THEN both jobs are announced, once
    run_worker()
    assert sorted(announced) == sorted(job_ids)


def test_a_batch_whose_chunk_message_was_lost_completes_through_the_swept_jobs(client, deployed, local_aws, run_worker, small_chunks):
    from shared.services import sweeper
    from tests.conftest import drain

    with WebhookReceiver(status=200) as receiver:
        # GIVEN a batch whose chunk messages were all lost (taken off the queue by no handler)
        body = submit(client, deployed, webhook_url=receiver.url)
        assert drain(local_aws.jobs_queue_url, lambda event, context: {"batchItemFailures": []}) >= 1
        assert client.get(f"/jobs/batch/{body['batch_id']}", headers=key(deployed)).json()["counts"]["pending"] == 3
        # WHEN the sweeper queues its pending jobs again, one job message each, and the worker runs them
        sweeper.sweep(queues_empty_since=utcnow() + timedelta(seconds=1))
        run_worker()
        got = receiver.wait_for(2, timeout=1.0)
    # THEN every job is completed, the batch is done, and its one webhook went out
    status = client.get(f"/jobs/batch/{body['batch_id']}", headers=key(deployed)).json()
    assert status["counts"] == {"pending": 0, "processing": 0, "completed": 3, "failed": 0, "invalid": 2}
    assert status["done"] is True and status["webhook_response_status"] == 200
    assert len(got) == 1 and got[0]["json"]["counts"]["completed"] == 3
    assert [line["status"] for line in result_lines(client, deployed, body["batch_id"])] == [
        "completed", "invalid", "completed", "invalid", "completed",
    ]


def test_a_batchs_jobs_are_inserted_in_one_statement_not_one_per_set(client, deployed):
    from tests.statement_counter import counting

    # GIVEN 50 valid input sets
    sets = [{"principal": 100000 + i, "annual_rate": 0.05, "years": 15} for i in range(50)]

    # WHEN they are sent as one batch
    with counting() as seen:
        body = submit(client, deployed, sets)

    # THEN the 50 jobs went into the database in one INSERT (pg8000's executemany would send one
    # per row: a 10,000-set batch took 4.5 s to accept on PostgreSQL, 1.1 s in multi-row INSERTs)
    inserts = [sql for sql in seen.sql if sql.lstrip().upper().startswith("INSERT INTO JOBS")]
    assert len(inserts) == 1
    with session_scope() as session:
        assert session.scalar(select(func.count()).select_from(Job).where(Job.batch_id == uuid.UUID(body["batch_id"]))) == 50


def test_a_chunks_jobs_are_finished_in_one_statement(client, deployed, run_worker):
    from tests.statement_counter import counting
    from tests.stats.rollups_check import assert_rollups_exact

    # GIVEN a batch whose three valid sets are one chunk
    body = submit(client, deployed, [*SETS[:3], {"principal": 5000, "annual_rate": 0.05, "years": 1}])

    # WHEN the worker computes the chunk
    with counting() as seen:
        run_worker()

    # THEN its jobs were finished in one statement (an executemany counts one per job on
    # PostgreSQL, which runs it row by row)
    finishes = [sql for sql in seen.sql if sql.startswith("UPDATE jobs") and "completed_at" in sql]
    assert len(finishes) == 1
    # AND each job has its own answer, and counts once in the statistics
    lines = result_lines(client, deployed, body["batch_id"])
    assert [line["status"] for line in lines] == ["completed", "invalid", "completed", "completed"]
    assert lines[2]["outputs"]["monthly_payment"] == pytest.approx(annuity(120000, 0.05, 15), rel=1e-9)
    assert lines[3]["outputs"]["monthly_payment"] == pytest.approx(annuity(5000, 0.05, 1), rel=1e-9)
    (row,) = assert_rollups_exact(deployed.admin.tenant_id)["job_stats_daily"].values()
    assert (row["total_calls"], row["completed_calls"], row["failed_calls"]) == (3, 3, 0)


def test_a_result_cell_longer_than_excel_allows_is_cut_where_excel_stops():
    import openpyxl

    from shared.services.batches import CELL_MAX_CHARACTERS, _cell

    # GIVEN a value whose JSON text is longer than a cell may hold (Excel: 32,767 characters)
    sheet = openpyxl.Workbook(write_only=True).create_sheet("Results")
    cell = _cell(sheet, ["x" * 40_000])
    # THEN the cell holds the limit, its last character saying it was cut
    assert len(cell.value) == CELL_MAX_CHARACTERS and cell.value.endswith("…")
    assert cell.value.startswith('["xxx')
