"""execute: wait= first, then polls with the spec's back-off 1, 2, 4, 8, 15 s; the outputs, a
typed JobFailed, or JobTimeout at the caller's deadline."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from pydantic import BaseModel, ConfigDict, Field

from client_fakes import BASE, KEY, body
from sheetcalc_client import AsyncClient, Client, JobFailed, JobTimeout

JOB = "11111111-1111-1111-1111-111111111111"
EXECUTE = "/jobs/execute/acme/loan"
ACCEPTED = {"job_id": JOB, "status": "pending", "message": "Job queued for processing", "created_at": "2026-03-01T09:00:00Z"}
PENDING = {"job_id": JOB, "status": "pending", "created_at": "2026-03-01T09:00:00Z", "updated_at": "2026-03-01T09:00:00Z"}
DONE = {**PENDING, "status": "completed", "inputs": {"principal": 1000}, "outputs": {"monthly_payment": 5.07},
        "completed_at": "2026-03-01T09:00:01Z", "execution_time_ms": 4}
FAILED = {**PENDING, "status": "failed", "inputs": {}, "error_message": "The workbook could not be calculated with these inputs"}


def client(service, clock, **options) -> Client:
    return Client(BASE, KEY, transport=service.transport(), sleep=clock.sleep, clock=clock, **options)


def test_a_job_finished_within_wait_is_answered_in_one_call(service, clock):
    service.on("POST", EXECUTE, httpx.Response(200, json=DONE))
    assert client(service, clock).execute("acme/loan", {"principal": 1000}) == {"monthly_payment": 5.07}
    [sent] = service.requests
    assert sent.url.params["wait"] == "20" and body(sent) == {"inputs": {"principal": 1000}}
    assert clock.sleeps == []


def test_an_unfinished_job_is_polled_with_back_off_1_2_4_8_then_every_15_seconds(service, clock):
    # GIVEN an execute whose wait passed first (202), and a job that finishes on the eighth poll
    service.on("POST", EXECUTE, httpx.Response(202, json=ACCEPTED))
    service.on("GET", f"/jobs/{JOB}", *[httpx.Response(200, json=PENDING)] * 7, httpx.Response(200, json=DONE))

    outputs = client(service, clock, job_timeout=None).execute("acme/loan", {"principal": 1000})

    assert outputs == {"monthly_payment": 5.07}
    assert clock.sleeps == [1, 2, 4, 8, 15, 15, 15, 15]
    assert len(service.sent("GET", f"/jobs/{JOB}")) == 8


def test_a_failed_job_raises_job_failed_with_its_error_message(service, clock):
    service.on("POST", EXECUTE, httpx.Response(200, json=FAILED))
    with pytest.raises(JobFailed) as raised:
        client(service, clock).execute("acme/loan", {})
    assert raised.value.error_message == "The workbook could not be calculated with these inputs"
    assert raised.value.job_id == JOB and raised.value.job.status == "failed"


def test_the_deadline_cuts_the_last_pause_and_raises_job_timeout(service, clock):
    service.on("POST", EXECUTE, httpx.Response(202, json=ACCEPTED))
    service.on("GET", f"/jobs/{JOB}", httpx.Response(200, json=PENDING))
    with pytest.raises(JobTimeout) as raised:
        client(service, clock, job_timeout=20).execute("acme/loan", {})
    assert clock.sleeps == [1, 2, 4, 8, 5]  # 20 s in all, then no more polls
    assert raised.value.job_id == JOB and raised.value.status == "pending"


def test_wait_none_sends_no_wait_and_a_bare_engine_takes_its_tenant_from_the_key(service, clock):
    service.on("POST", EXECUTE, httpx.Response(202, json=ACCEPTED))
    service.on("GET", f"/jobs/{JOB}", httpx.Response(200, json=DONE))
    client(service, clock, wait=None).execute("loan", {})
    assert "wait" not in service.requests[0].url.params and service.requests[0].url.path == EXECUTE


def test_test_execute_posts_to_the_version_with_the_test_key(service, clock):
    version = "22222222-2222-2222-2222-222222222222"
    service.on("POST", f"/jobs/test/acme/loan/{version}", httpx.Response(200, json=DONE))
    assert client(service, clock).test_execute("acme/loan", version, {"principal": 1000}) == {"monthly_payment": 5.07}
    assert service.requests[0].headers["Idempotency-Key"]


class LoanInputs(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    principal: float
    annual_rate: float | None = Field(None, alias="Annual Rate")
    years: int | None = None


class LoanOutputs(BaseModel):
    monthly_payment: float


def test_a_typed_engine_sends_the_set_fields_by_alias_and_returns_the_outputs_model(service, clock):
    service.on("POST", EXECUTE, httpx.Response(200, json=DONE))
    engine = client(service, clock).engine("acme/loan", inputs=LoanInputs, outputs=LoanOutputs)
    outputs = engine.execute(LoanInputs(principal=1000, annual_rate=0.05))
    assert outputs == LoanOutputs(monthly_payment=5.07)
    # years was not set: left out, so the workbook keeps its own value
    assert body(service.requests[0])["inputs"] == {"principal": 1000.0, "Annual Rate": 0.05}


def test_the_async_client_retries_and_polls_the_same_way(service, clock):
    service.on("POST", EXECUTE, httpx.Response(429, headers={"Retry-After": "2"}, json={"detail": "Rate limit exceeded"}),
               httpx.Response(202, json=ACCEPTED))
    service.on("GET", f"/jobs/{JOB}", httpx.Response(200, json=PENDING), httpx.Response(200, json=PENDING),
               httpx.Response(200, json=DONE))

    async def run():
        async with AsyncClient(BASE, KEY, transport=service.transport(), sleep=clock.async_sleep, clock=clock) as c:
            typed = c.engine("acme/loan", inputs=LoanInputs, outputs=LoanOutputs)
            return await typed.execute(LoanInputs(principal=1000))

    assert asyncio.run(run()) == LoanOutputs(monthly_payment=5.07)
    sent = service.sent("POST", EXECUTE)
    assert len(sent) == 2 and sent[0].headers["Idempotency-Key"] == sent[1].headers["Idempotency-Key"]
    assert clock.sleeps[0] >= 2 and clock.sleeps[1:] == [1, 2, 4]


def test_batch_results_are_read_line_by_line_and_the_batch_polled_with_back_off(service, clock):
    batch = "33333333-3333-3333-3333-333333333333"
    counts = {"pending": 0, "processing": 0, "completed": 1, "failed": 0, "invalid": 1}
    service.on("POST", "/jobs/batch/acme/loan", httpx.Response(202, json={
        "batch_id": batch, "total": 2, "jobs": 1, "counts": {**counts, "completed": 0, "pending": 1},
        "invalid": [{"index": 1, "error": "Input validation failed: principal"}]}))
    service.on("GET", f"/jobs/batch/{batch}",
               httpx.Response(200, json={"batch_id": batch, "total": 2, "counts": {**counts, "completed": 0, "pending": 1}, "done": False}),
               httpx.Response(200, json={"batch_id": batch, "total": 2, "counts": counts, "done": True}))
    lines = (b'{"index": 0, "job_id": "j0", "status": "completed", "outputs": {"monthly_payment": 5.07}}\n'
             b'{"index": 1, "job_id": null, "status": "invalid", "error": "Input validation failed: principal"}\n')
    service.on("GET", f"/jobs/batch/{batch}/results", httpx.Response(200, content=lines))
    seen = []

    results = client(service, clock).run_batch("acme/loan", [{"principal": 1}, {"principal": [1]}], on_progress=seen.append)

    assert [(r.index, r.status) for r in results] == [(0, "completed"), (1, "invalid")]
    assert results[0].outputs == {"monthly_payment": 5.07} and results[1].job_id is None
    assert [s.done for s in seen] == [False, True] and clock.sleeps == [1]


def test_download_saves_the_file_and_does_not_send_the_key_to_storage(service, clock, tmp_path):
    service.on("GET", f"/jobs/{JOB}/download", httpx.Response(200, json={
        "download_url": "http://storage.test/bucket/filled.xlsx?X-Amz-Signature=abc", "filename": "loan_111_20260301.xlsx",
        "expires_at": "2026-03-01T10:00:00Z"}))
    service.on("GET", "/bucket/filled.xlsx", httpx.Response(200, content=b"PK\x03\x04workbook"))
    saved = client(service, clock).download(JOB, tmp_path)
    assert saved == tmp_path / "loan_111_20260301.xlsx" and saved.read_bytes() == b"PK\x03\x04workbook"
    storage = service.sent("GET", "/bucket/filled.xlsx")[0]
    assert storage.url.host == "storage.test" and "X-API-Key" not in storage.headers
