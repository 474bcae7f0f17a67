"""wait=N: one call answers with the finished job, woken by its completion, never by a timer.

GET /jobs/{id}?wait=N holds the request until the job finishes or N seconds pass, then answers as
without wait; POST execute/test-execute ?wait=N answers 200 with the finished job (the body GET
gives) when it finishes within N seconds, 202 as today otherwise. A waiter holds no database
connection and no worker thread, so many of them leave the pool and the threadpool to others.
Waiters are bounded per API key and per tenant in each API process: a call beyond answers at once,
as without wait.

Tests where a request waits while the worker runs use their own transactions (as production
does): the waiting request and the worker each use their own connections at the same time.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import anyio.to_thread
import pytest

from shared.adapters import aws as aws_clients
from shared.adapters import completions
from shared.config import get_settings
from shared.db.session import get_engine
from shared.repositories import jobs as job_repo
from shared.services import job_runner, job_waits, jobs
from shared.services.callers import ConsumerRequest
from shared.services.job_waits import INVALID_WAIT
from shared.services.jobs import NO_WAIT
from tests.factories import deploy_loan, submit_job

INPUTS = {"principal": 100000, "annual_rate": 0.05, "years": 10}
# Only a waiter never woken gets near these: no verdict depends on the machine's speed.
LONG_WAIT = 25
HANG_SECONDS = 120


@pytest.fixture
def patient_waiters(monkeypatch):
    """Every waiter's deadline HANG_SECONDS later than its wait asks, for the tests where a worker
    finishes the job while consumers wait: on a loaded machine the worker (a fresh calculation
    child, the model's load) can take longer than the 25 s a consumer may wait, and these tests are
    about being woken, not about the machine's speed. A waiter never woken still shows: it answers
    only at its deadline, LONG_WAIT + HANG_SECONDS, after the tests' own HANG_SECONDS bounds."""
    original = job_waits._until_finished

    async def patient(job, woken, deadline):
        return await original(job, woken, deadline + HANG_SECONDS)

    monkeypatch.setattr(job_waits, "_until_finished", patient)


def annuity(principal, annual_rate, years):
    """The loan's monthly payment by the annuity formula Excel's PMT documents."""
    r, n = annual_rate / 12, years * 12
    return principal * r / (1 - (1 + r) ** -n)


def key(deployed) -> dict:
    return {"X-API-Key": deployed.api_key}


def queued_messages() -> int:
    attributes = aws_clients.client("sqs").get_queue_attributes(
        QueueUrl=get_settings().jobs_queue_url, AttributeNames=["ApproximateNumberOfMessages"]
    )
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


def until_waiting(count: int = 1) -> None:
    """Until ``count`` waiters are registered in this process and as many jobs are on the queue
    (an execute registers under its job's id just before it makes and queues the job); none is
    answered before the worker runs."""
    deadline = time.monotonic() + HANG_SECONDS
    while sum(completions.hub().waiting().values()) < count or queued_messages() < count:
        assert time.monotonic() < deadline, f"only {completions.hub().waiting()} waiting, {queued_messages()} queued"
        time.sleep(0.01)


def answered_while(send, finish):
    """``send()`` from another thread; once it waits, ``finish()``: its answer and how long it took."""
    with ThreadPoolExecutor(1) as pool:
        started = time.monotonic()
        answer = pool.submit(send)
        until_waiting()
        finish()
        r = answer.result(timeout=HANG_SECONDS)
    return r, time.monotonic() - started


# --- the value of wait ---------------------------------------------------------------------------


@pytest.mark.parametrize("wait", ["0", "-1", "25.5", "26", "abc", "nan", "inf", ""])
def test_a_wait_outside_0_to_25_seconds_is_refused_with_400_and_queues_nothing(client, deployed, wait):
    job_id = submit_job(deployed, INPUTS)
    r = client.get(f"/jobs/{job_id}", params={"wait": wait}, headers=key(deployed))
    assert (r.status_code, r.json()) == (400, {"detail": INVALID_WAIT})
    r = client.post(deployed.execute_path, params={"wait": wait}, headers=key(deployed), json={"inputs": INPUTS})
    assert (r.status_code, r.json()) == (400, {"detail": INVALID_WAIT})
    listed = deployed.admin.get(f"/engines/{deployed.engine_id}/jobs").json()
    assert [j["job_id"] for j in listed["jobs"]] == [job_id]


def test_an_invalid_wait_is_answered_before_the_path_and_the_body_are_validated(client, deployed):
    # GIVEN requests whose wait is invalid and whose body or path is invalid too
    # WHEN they are sent
    # THEN the wait's 400 answers (the key and wait are read before the path and body are validated) ...
    r = client.post(deployed.execute_path, params={"wait": "abc"}, headers=key(deployed), json={"inputs": "not an object"})
    assert (r.status_code, r.json()) == (400, {"detail": INVALID_WAIT})
    r = client.get("/jobs/not-a-uuid", params={"wait": "abc"}, headers=key(deployed))
    assert (r.status_code, r.json()) == (400, {"detail": INVALID_WAIT})
    # ... except a body that is not JSON at all, refused (422) before anything is read
    r = client.post(
        deployed.execute_path, params={"wait": "abc"}, headers={**key(deployed), "Content-Type": "application/json"}, content=b"{",
    )
    assert r.status_code == 422
    # AND nothing was queued
    assert deployed.admin.get(f"/engines/{deployed.engine_id}/jobs").json()["jobs"] == []


# --- the answer when the job has not finished in time ---------------------------------------------


def test_a_job_that_does_not_finish_in_time_answers_as_without_wait_after_the_wait(client, deployed):
    # GIVEN a job no worker runs during the test
    job_id = submit_job(deployed, INPUTS)
    without = client.get(f"/jobs/{job_id}", headers=key(deployed))
    # WHEN its status is asked with wait=1
    started = time.monotonic()
    r = client.get(f"/jobs/{job_id}", params={"wait": "1"}, headers=key(deployed))
    # THEN after the second has passed it answers as without wait: pending
    assert time.monotonic() - started >= 1.0
    assert (r.status_code, r.json()) == (200, without.json())
    assert r.json()["status"] == "pending" and "outputs" not in r.json()
    assert completions.hub().waiting() == {}


def test_execute_with_wait_answers_202_as_today_when_the_job_has_not_finished(client, deployed):
    started = time.monotonic()
    r = client.post(deployed.execute_path, params={"wait": "0.5"}, headers=key(deployed), json={"inputs": INPUTS})
    assert time.monotonic() - started >= 0.5
    assert r.status_code == 202, r.text
    assert set(r.json()) == {"job_id", "status", "message", "created_at"}
    assert (r.json()["status"], r.json()["message"]) == ("pending", "Job queued for processing")


# --- the answer when it has ---------------------------------------------------------------------


def test_a_finished_job_answers_at_once_with_the_body_get_gives(client, deployed, run_worker):
    job_id = submit_job(deployed, INPUTS)
    run_worker()
    r = client.get(f"/jobs/{job_id}", params={"wait": str(LONG_WAIT)}, headers=key(deployed))
    assert r.status_code == 200
    assert r.json() == client.get(f"/jobs/{job_id}", headers=key(deployed)).json()
    assert r.json()["outputs"]["monthly_payment"] == pytest.approx(annuity(**INPUTS), rel=1e-12)


@pytest.mark.own_transactions
def test_get_with_wait_is_woken_by_the_jobs_completion(client, admin, loan_xlsx, run_worker, patient_waiters):
    deployed = deploy_loan(admin, loan_xlsx)
    job_id = submit_job(deployed, INPUTS)
    # GIVEN a consumer waiting up to 25 s for a pending job, WHEN the worker finishes it
    r, seconds = answered_while(lambda: client.get(f"/jobs/{job_id}", params={"wait": str(LONG_WAIT)}, headers=key(deployed)), run_worker)
    # THEN the one call answers with the outputs, well before the deadline: woken, not timed out
    assert seconds < HANG_SECONDS
    assert r.status_code == 200 and r.json()["status"] == "completed"
    assert r.json()["outputs"]["monthly_payment"] == pytest.approx(annuity(**INPUTS), rel=1e-12)
    assert r.json() == client.get(f"/jobs/{job_id}", headers=key(deployed)).json()


@pytest.mark.own_transactions
@pytest.mark.parametrize("route", ["execute", "test-execute"])
def test_execute_with_wait_answers_200_with_the_finished_job(client, admin, loan_xlsx, run_worker, route, patient_waiters):
    deployed = deploy_loan(admin, loan_xlsx)
    path, headers = deployed.execute_path, key(deployed)
    if route == "test-execute":
        path, headers = f"/jobs/test/{admin.slug}/{deployed.engine_slug}/{deployed.version_id}", {"X-API-Key": deployed.test_key}
    r, seconds = answered_while(lambda: client.post(path, params={"wait": str(LONG_WAIT)}, headers=headers, json={"inputs": INPUTS}), run_worker)
    assert seconds < HANG_SECONDS  # woken: one never woken answers at its deadline
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "completed" and r.json()["inputs"] == INPUTS
    assert r.json()["outputs"]["monthly_payment"] == pytest.approx(annuity(**INPUTS), rel=1e-12)
    assert r.json() == client.get(f"/jobs/{r.json()['job_id']}", headers=headers).json()


class Reads:
    """Counts the reads of a job by its id alone (the read a woken waiter makes without a state)."""

    def __init__(self, monkeypatch):
        self.count = 0
        read = job_repo.get_job

        def counted(session, *, job_id):
            self.count += 1
            return read(session, job_id=job_id)

        monkeypatch.setattr(job_repo, "get_job", counted)


@pytest.mark.own_transactions
@pytest.mark.parametrize(("max_state_bytes", "reads_expected"), [(completions.MAX_STATE_BYTES, 0), (10, 1)],
                         ids=["state carried: not read", "state too long to carry: read once"])
def test_a_waiter_answers_with_the_finished_job_its_announcement_carries_or_reads_it(
    client, admin, loan_xlsx, run_worker, monkeypatch, max_state_bytes, reads_expected, patient_waiters
):
    deployed = deploy_loan(admin, loan_xlsx)
    reads = Reads(monkeypatch)
    # GIVEN finished states short enough to carry, or too long (as outputs of many kilobytes are)
    monkeypatch.setattr(completions, "MAX_STATE_BYTES", max_state_bytes)
    # WHEN a consumer waits at execute and the worker finishes the job
    r, _ = answered_while(lambda: client.post(deployed.execute_path, params={"wait": str(LONG_WAIT)}, headers=key(deployed),
                                              json={"inputs": INPUTS}), run_worker)
    # THEN the answer is the finished job, as GET shows it, read by the waiter only when not carried
    assert (r.status_code, r.json()["status"]) == (200, "completed"), r.text
    assert reads.count == reads_expected
    assert r.json() == client.get(f"/jobs/{r.json()['job_id']}", headers=key(deployed)).json()


@pytest.mark.own_transactions
def test_a_waiter_is_woken_when_the_jobs_dead_letter_fails_it(client, admin, loan_xlsx, patient_waiters):
    deployed = deploy_loan(admin, loan_xlsx)
    job_id = submit_job(deployed, INPUTS)
    # WHEN the job's message runs out of deliveries and the dead-letter handler fails it
    r, seconds = answered_while(
        lambda: client.get(f"/jobs/{job_id}", params={"wait": str(LONG_WAIT)}, headers=key(deployed)),
        lambda: job_runner.fail_dead_lettered(job_id),
    )
    assert seconds < HANG_SECONDS  # woken: one never woken answers at its deadline
    assert (r.status_code, r.json()["status"], r.json()["error_message"]) == (200, "failed", job_runner.DEAD_LETTERED)


def test_an_announcement_that_fails_costs_no_job(client, deployed, run_worker, monkeypatch):
    # GIVEN completions cannot be announced (the socket directory or the database refuses)
    def refuse(_job_ids):
        raise OSError("no room")

    monkeypatch.setattr(completions, "announce", refuse)
    job_id = submit_job(deployed, INPUTS)
    # WHEN the worker finishes the job THEN it is completed all the same, and a wait shows it
    run_worker()
    r = client.get(f"/jobs/{job_id}", params={"wait": "1"}, headers=key(deployed))
    assert (r.status_code, r.json()["status"]) == (200, "completed")


# --- who may wait ---------------------------------------------------------------------------------


def test_execute_with_wait_needs_the_view_permission_the_answer_shows(client, admin, loan_xlsx):
    # GIVEN a consumer that may execute but not view jobs
    deployed = deploy_loan(admin, loan_xlsx, flags={"can_execute": True, "can_view_jobs": False, "can_download": False, "can_view_about": False})
    # WHEN it executes with wait THEN it is refused and nothing is queued
    r = client.post(deployed.execute_path, params={"wait": "5"}, headers=key(deployed), json={"inputs": INPUTS})
    assert (r.status_code, r.json()) == (403, {"detail": NO_WAIT})
    assert admin.get(f"/engines/{deployed.engine_id}/jobs").json()["jobs"] == []
    # AND without wait it executes as before
    assert client.post(deployed.execute_path, headers=key(deployed), json={"inputs": INPUTS}).status_code == 202


def test_waiting_for_a_job_that_is_not_the_callers_answers_404_at_once(client, deployed):
    r = client.get(f"/jobs/{uuid.uuid4()}", params={"wait": str(LONG_WAIT)}, headers=key(deployed))
    assert (r.status_code, r.json()) == (404, {"detail": "Job not found"})
    assert completions.hub().waiting() == {}


# --- many waiters ---------------------------------------------------------------------------------


@pytest.mark.own_transactions
def test_fifty_waiters_hold_neither_the_database_pool_nor_the_threadpool(client, admin, loan_xlsx, run_worker, configure, patient_waiters):
    # GIVEN 50 consumers waiting for 50 pending jobs: more than the pool's 15 connections and the
    # threadpool's 40 threads (one key and one tenant here, so their bounds on waiters and on calls
    # in progress are raised for it: 8 and 32 waiters, 16 calls per tenant by default)
    configure(consumer_max_waiters=50, tenant_max_waiters=50, api_max_job_calls=64, api_max_job_calls_per_tenant=64)
    deployed = deploy_loan(admin, loan_xlsx)
    job_ids = [submit_job(deployed, {**INPUTS, "principal": 1000 * (i + 1)}) for i in range(50)]
    with ThreadPoolExecutor(50) as pool:
        answers = [pool.submit(client.get, f"/jobs/{job_id}", params={"wait": str(LONG_WAIT)}, headers=key(deployed)) for job_id in job_ids]
        until_waiting(50)
        # WHEN other requests come meanwhile THEN they answer, database reads included
        assert client.get("/health").status_code == 200
        assert client.get(f"/jobs/{job_ids[0]}", headers=key(deployed)).json()["status"] == "pending"
        # AND once the worker runs, every waiter gets its own job's outputs
        run_worker()
        results = [a.result(timeout=HANG_SECONDS) for a in answers]
    assert [r.status_code for r in results] == [200] * 50
    for i, r in enumerate(results):
        assert (r.json()["job_id"], r.json()["status"]) == (job_ids[i], "completed")
        assert r.json()["outputs"]["monthly_payment"] == pytest.approx(annuity(**{**INPUTS, "principal": 1000 * (i + 1)}), rel=1e-12)


@pytest.mark.own_transactions
def test_an_api_process_runs_at_most_api_job_threads_job_calls_at_once(configure):
    # GIVEN a bound of 3 and nine executes arriving together, each held once inside
    configure(api_job_threads=3)
    inside, most, counting = 0, 0, threading.Lock()
    release = threading.Event()

    def queue(session, job_id):
        nonlocal inside, most
        with counting:
            inside += 1
            most = max(most, inside)
        assert release.wait(HANG_SECONDS)
        with counting:
            inside -= 1
        return SimpleNamespace(id=job_id)

    async def nine_at_once():
        calls = [asyncio.ensure_future(job_waits.execute(queue, wait=None)) for _ in range(9)]
        turns, deadline = job_waits.turns(), time.monotonic() + HANG_SECONDS
        # Until six wait for a turn AND the three with one are inside (a thread given its turn
        # enters a moment later on a busy machine), or more than three are inside at once.
        while (turns.statistics().tasks_waiting < 6 or most < 3) and most <= 3:
            assert time.monotonic() < deadline, f"{most} inside, {turns.statistics()}"
            await asyncio.sleep(0.01)
        # WHEN three are inside THEN the other six wait for a turn on the event loop, not in threads
        held = most
        release.set()
        return held, await asyncio.gather(*calls)

    held, made = asyncio.run(nine_at_once())
    assert held == 3
    # AND every one is made in its turn, never more than three at once
    assert len({job.id for job in made}) == 9
    assert most == 3


# --- how many may wait at once --------------------------------------------------------------------


def waiting_for(client, deployed, job_id):
    return client.get(f"/jobs/{job_id}", params={"wait": str(LONG_WAIT)}, headers=key(deployed))


class Waiters:
    """Counts the calls that have a place to wait and wait (not those still in their first read)."""

    def __init__(self, monkeypatch):
        self.count = 0
        original = job_waits._until_finished

        async def counted(*args):
            self.count += 1
            return await original(*args)

        monkeypatch.setattr(job_waits, "_until_finished", counted)

    def until(self, count: int) -> None:
        deadline = time.monotonic() + HANG_SECONDS
        while self.count < count:
            assert time.monotonic() < deadline, f"only {self.count} waiting"
            time.sleep(0.01)


@pytest.mark.own_transactions
def test_a_key_waits_at_most_its_bound_at_once_and_a_call_beyond_answers_at_once_as_without_wait(
    client, admin, loan_xlsx, run_worker, configure, monkeypatch, patient_waiters
):
    # GIVEN a key allowed 2 waiters at once, and 2 of its calls waiting for pending jobs
    configure(consumer_max_waiters=2)
    deployed = deploy_loan(admin, loan_xlsx)
    job_ids = [submit_job(deployed, {**INPUTS, "principal": 1000 * (i + 1)}) for i in range(2)]
    places = Waiters(monkeypatch)
    with ThreadPoolExecutor(2) as pool:
        waiters = [pool.submit(waiting_for, client, deployed, job_id) for job_id in job_ids]
        places.until(2)
        # WHEN the key executes with wait once more
        started = time.monotonic()
        r = client.post(deployed.execute_path, params={"wait": str(LONG_WAIT)}, headers=key(deployed), json={"inputs": INPUTS})
        # THEN it does not wait (only a wait that was not refused takes LONG_WAIT): 202 with the job queued, as without wait
        assert time.monotonic() - started < LONG_WAIT
        assert (r.status_code, r.json()["status"], r.json()["message"]) == (202, "pending", "Job queued for processing")
        assert client.get(f"/jobs/{r.json()['job_id']}", headers=key(deployed)).json()["status"] == "pending"
        # AND the two waiting get their finished jobs once the worker runs
        run_worker()
        answers = [w.result(timeout=HANG_SECONDS) for w in waiters]
    assert [(a.status_code, a.json()["status"]) for a in answers] == [(200, "completed")] * 2


@pytest.mark.own_transactions
def test_a_tenant_waits_at_most_its_bound_at_once_whichever_of_its_keys_waits(
    client, admin, loan_xlsx, run_worker, configure, monkeypatch, patient_waiters
):
    # GIVEN a tenant allowed 2 waiters at once (its keys unbounded), waiting with two of its keys
    configure(consumer_max_waiters=0, tenant_max_waiters=2)
    first, second = deploy_loan(admin, loan_xlsx), deploy_loan(admin, loan_xlsx)
    job_ids = [submit_job(first, INPUTS), submit_job(second, INPUTS), submit_job(first, INPUTS)]
    places = Waiters(monkeypatch)
    with ThreadPoolExecutor(2) as pool:
        waiters = [pool.submit(waiting_for, client, first, job_ids[0]), pool.submit(waiting_for, client, second, job_ids[1])]
        places.until(2)
        # WHEN either key asks with wait for another job
        started = time.monotonic()
        r = waiting_for(client, first, job_ids[2])
        # THEN it answers at once, as without wait: the job as it is, pending
        assert time.monotonic() - started < LONG_WAIT
        assert (r.status_code, r.json()["status"]) == (200, "pending")
        run_worker()
        answers = [w.result(timeout=HANG_SECONDS) for w in waiters]
    assert [(a.status_code, a.json()["status"]) for a in answers] == [(200, "completed")] * 2
    # AND once they are answered, the tenant may wait again: a finished job answers at once, completed
    assert waiting_for(client, first, job_ids[2]).json()["status"] == "completed"


@pytest.mark.own_transactions
def test_a_waiter_holds_no_thread_turn_or_database_connection_while_it_waits(admin, loan_xlsx, run_worker, patient_waiters):
    # GIVEN a pending job and its consumer waiting for it (the service call the route makes)
    deployed = deploy_loan(admin, loan_xlsx)
    job_id = uuid.UUID(submit_job(deployed, INPUTS))
    request = ConsumerRequest(api_key=deployed.api_key, client_ip="127.0.0.1")

    async def wait_and_look():
        waiter = asyncio.ensure_future(job_waits.get_job(
            lambda session: jobs.get_job(session, request=request, job_id=job_id), job_id=job_id, wait=LONG_WAIT))
        deadline = time.monotonic() + HANG_SECONDS
        while not job_waits.waiting():
            assert time.monotonic() < deadline and not waiter.done(), "the call never started waiting"
            await asyncio.sleep(0.01)
        # WHEN it waits THEN it holds no turn, no thread of the threadpool and no pooled connection
        held = (job_waits.turns().statistics().borrowed_tokens,
                anyio.to_thread.current_default_thread_limiter().statistics().borrowed_tokens, get_engine().pool.checkedout())
        waiting = dict(job_waits.waiting())
        # AND the worker finishing the job wakes it
        await anyio.to_thread.run_sync(run_worker)
        return held, waiting, await asyncio.wait_for(waiter, HANG_SECONDS)

    held, waiting, job = asyncio.run(wait_and_look())
    assert held == (0, 0, 0)
    assert waiting == {f"key:consumer:{deployed.consumer_id}": 1, f"tenant:{deployed.admin.tenant_id}": 1}
    assert job.status == "completed"
