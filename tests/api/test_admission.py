"""Admission of consumer calls in an API process: at most ``api_max_job_calls`` in progress (of one
tenant ``api_max_job_calls_per_tenant``); more wait for a place, bodies unread, the tenants waiting
served in turn; beyond the waiting room 503 (429 for a tenant's own share of it), with
``Retry-After: 1``. /health and the management API are never held back, and a call that waits
(wait=N) stops counting once it waits.

Calls are held in progress by a stand-in for the job status service that blocks until released
(no timing: each test waits for the state it needs, with a deadline only a hang reaches).
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from shared.api import admission
from shared.api.admission import BUSY, TENANT_BUSY, Admission, Gate
from shared.config import get_settings
from shared.errors import NotFound
from shared.services import jobs
from tests.api.test_job_wait import INPUTS, Waiters, patient_waiters, waiting_for  # noqa: F401 (a fixture)
from tests.factories import deploy_loan, make_admin, submit_job

HANG_SECONDS = 120
NOT_FOUND = {"detail": "Job not found"}


class Held:
    """Job status calls held inside the service until released (oldest first); each then answers
    404. ``entered`` lists the tenant slug of each call, in the order they came in."""

    def __init__(self, monkeypatch):
        self.entered: list[str] = []
        self._inside: list[threading.Event] = []
        self._lock = threading.Lock()

        def held(session, *, request, job_id):
            go = threading.Event()
            with self._lock:
                self.entered.append(request.api_key.rpartition("_")[0])
                self._inside.append(go)
            assert go.wait(HANG_SECONDS)
            raise NotFound("Job not found")

        monkeypatch.setattr(jobs, "get_job", held)

    def until_entered(self, count: int) -> None:
        _until(lambda: len(self.entered) >= count, lambda: f"{self.entered} entered")

    def release_one(self) -> None:
        with self._lock:
            self._inside.pop(0).set()

    def release_all(self) -> None:
        with self._lock:
            for go in self._inside:
                go.set()
            self._inside.clear()


def _until(done, what) -> None:
    deadline = time.monotonic() + HANG_SECONDS
    while not done():
        assert time.monotonic() < deadline, what()
        time.sleep(0.01)


def gate_of(client) -> Gate:
    """The admission gate of the app the client calls (its outermost middleware but the server's errors)."""
    layer = client.app.middleware_stack
    while not isinstance(layer, Admission):
        layer = layer.app
    return layer.gate


def until_queued(client, count: int) -> None:
    gate = gate_of(client)
    _until(lambda: gate.queued >= count, lambda: f"{gate.queued} waiting for a place")


def status(client, deployed):
    return client.get("/jobs/00000000-0000-4000-8000-000000000000", headers={"X-API-Key": deployed.api_key})


def execute(client, deployed):
    return client.post(deployed.execute_path, headers={"X-API-Key": deployed.api_key}, json={"inputs": INPUTS})


def test_a_call_beyond_the_process_bound_waits_for_a_place_and_then_goes_on(client, deployed, configure, monkeypatch):
    # GIVEN a process that has 2 consumer calls in progress at once, and 2 in progress
    configure(api_max_job_calls=2, api_max_job_calls_per_tenant=0)
    held = Held(monkeypatch)
    with ThreadPoolExecutor(3) as pool:
        in_progress = [pool.submit(status, client, deployed) for _ in range(2)]
        held.until_entered(2)
        # WHEN a third comes THEN it waits for a place, not in the service
        third = pool.submit(status, client, deployed)
        until_queued(client, 1)
        assert len(held.entered) == 2
        # AND /health and the management API answer meanwhile
        assert client.get("/health").status_code == 200
        assert deployed.admin.get(f"/engines/{deployed.engine_id}").status_code == 200
        # AND once one of the two has answered, the third goes in
        held.release_one()
        held.until_entered(3)
        held.release_all()
        assert [f.result(timeout=HANG_SECONDS).json() for f in [*in_progress, third]] == [NOT_FOUND] * 3
    assert (gate_of(client).in_progress[None], gate_of(client).queued) == (0, 0)


def test_beyond_the_waiting_room_a_call_is_refused_at_once_with_503_before_its_body_is_read(client, deployed, configure, monkeypatch):
    # GIVEN a process with 1 call in progress and 1 waiting, all it takes
    configure(api_max_job_calls=1, api_max_job_calls_per_tenant=0, api_max_queued_job_calls=1)
    held = Held(monkeypatch)
    with ThreadPoolExecutor(2) as pool:
        calls = [pool.submit(status, client, deployed)]
        held.until_entered(1)
        calls.append(pool.submit(status, client, deployed))
        until_queued(client, 1)
        # WHEN another comes, with a body that is not even JSON
        r = client.post(deployed.execute_path, headers={"X-API-Key": deployed.api_key, "Content-Type": "application/json"},
                        content=b"{")
        # THEN it is refused at once with 503 and Retry-After: 1 (its body unread: no 422)
        assert (r.status_code, r.json(), r.headers["Retry-After"]) == (503, {"detail": BUSY}, "1")
        held.release_all()
        held.until_entered(2)
        held.release_all()
        assert [c.result(timeout=HANG_SECONDS).json() for c in calls] == [NOT_FOUND] * 2
    # AND once they have answered, calls are taken in again
    assert execute(client, deployed).status_code == 202


def test_a_call_that_waits_too_long_for_a_place_is_answered_503(client, deployed, configure, monkeypatch):
    configure(api_max_job_calls=1, api_max_job_calls_per_tenant=0)
    monkeypatch.setattr(admission, "WAIT_SECONDS", 0.2)  # the process's place stays taken throughout
    held = Held(monkeypatch)
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(status, client, deployed)
        held.until_entered(1)
        r = status(client, deployed)
        assert (r.status_code, r.json(), r.headers["Retry-After"]) == (503, {"detail": BUSY}, "1")
        assert gate_of(client).queued == 0
        held.release_all()
        assert first.result(timeout=HANG_SECONDS).json() == NOT_FOUND


def test_a_tenant_over_its_share_waits_while_another_tenant_goes_in_and_past_its_waiting_share_gets_429(
    client, deployed, configure, monkeypatch, loan_xlsx
):
    # GIVEN a tenant's share of 1 call in progress and 1 waiting, both taken
    configure(api_max_job_calls=0, api_max_job_calls_per_tenant=1, api_max_queued_job_calls_per_tenant=1)
    neighbour = deploy_loan(make_admin(client), loan_xlsx)
    held = Held(monkeypatch)
    with ThreadPoolExecutor(2) as pool:
        calls = [pool.submit(status, client, deployed)]
        held.until_entered(1)
        calls.append(pool.submit(status, client, deployed))
        until_queued(client, 1)
        # WHEN the tenant calls once more, with any of its keys (the test key too)
        r = client.post(f"/jobs/test/{deployed.admin.slug}/{deployed.engine_slug}/{deployed.version_id}",
                        headers={"Authorization": f"Bearer {deployed.test_key}"}, json={"inputs": INPUTS})
        # THEN it is told to retry in a second
        assert (r.status_code, r.json(), r.headers["Retry-After"]) == (429, {"detail": TENANT_BUSY}, "1")
        # AND another tenant goes in meanwhile, ahead of the tenant's waiting call
        assert execute(client, neighbour).status_code == 202
        assert held.entered == [deployed.admin.slug]
        held.release_one()
        held.until_entered(2)
        held.release_all()
        assert [c.result(timeout=HANG_SECONDS).json() for c in calls] == [NOT_FOUND] * 2


def test_places_go_to_the_tenants_waiting_in_turn(client, deployed, configure, monkeypatch, loan_xlsx):
    # GIVEN one place, taken by tenant A, then A's second and third calls waiting, then tenant B's
    configure(api_max_job_calls=1, api_max_job_calls_per_tenant=0)
    neighbour = deploy_loan(make_admin(client), loan_xlsx)
    a, b = deployed.admin.slug, neighbour.admin.slug
    held = Held(monkeypatch)
    with ThreadPoolExecutor(4) as pool:
        calls = [pool.submit(status, client, deployed)]
        held.until_entered(1)
        for queued, caller in enumerate((deployed, deployed, neighbour), start=1):
            calls.append(pool.submit(status, client, caller))
            until_queued(client, queued)
        # WHEN the place frees three times
        for entered in (2, 3, 4):
            held.release_one()
            held.until_entered(entered)
        held.release_all()
        assert [c.result(timeout=HANG_SECONDS).json() for c in calls] == [NOT_FOUND] * 4
    # THEN B's call went in before A's third: A's burst did not stand in front of B
    assert held.entered == [a, a, b, a]


@pytest.mark.own_transactions
@pytest.mark.usefixtures("patient_waiters")
def test_a_call_stops_counting_once_it_waits(client, admin, loan_xlsx, run_worker, configure, monkeypatch):
    # GIVEN a process that has 1 consumer call in progress at once, and a call waiting (wait=N) for a pending job
    configure(api_max_job_calls=1)
    deployed = deploy_loan(admin, loan_xlsx)
    job_id = submit_job(deployed, INPUTS)
    places = Waiters(monkeypatch)
    with ThreadPoolExecutor(1) as pool:
        waiter = pool.submit(waiting_for, client, deployed, job_id)
        places.until(1)
        # WHEN another call comes THEN it goes in at once: the waiter holds nothing the bound protects
        assert gate_of(client).in_progress[None] == 0
        r = client.get(f"/jobs/{job_id}", headers={"X-API-Key": deployed.api_key})
        assert (r.status_code, r.json()["status"]) == (200, "pending")
        run_worker()
        answer = waiter.result(timeout=HANG_SECONDS)
    assert (answer.status_code, answer.json()["status"]) == (200, "completed")


def test_a_call_gone_while_it_waits_for_a_place_gives_its_turn_up(configure):
    # GIVEN one place, taken, and a call waiting for it
    configure(api_max_job_calls=1, api_max_job_calls_per_tenant=0)

    async def scenario():
        gate, settings = Gate(), get_settings()
        await gate.enter("acme", settings)
        gone = asyncio.ensure_future(gate.enter("acme", settings))
        nxt = asyncio.ensure_future(gate.enter("other", settings))
        while gate.queued < 2:
            await asyncio.sleep(0)
        # WHEN the first waiting call's client goes away (its task cancelled) and the place frees
        gone.cancel()
        await asyncio.gather(gone, return_exceptions=True)
        gate.leave("acme")
        await asyncio.wait_for(nxt, HANG_SECONDS)
        # THEN the next waiting call has the place, and nothing is left counted for the one gone
        return dict(+gate.in_progress), gate.queued, gone.cancelled()

    assert asyncio.run(scenario()) == ({None: 1, "other": 1}, 0, True)


def test_the_tenant_is_the_one_the_key_names():
    def scope(*headers):
        return {"headers": [(name.encode(), value.encode()) for name, value in headers]}

    assert admission.tenant_named(scope(("x-api-key", "acme-co_1234"))) == "acme-co"
    assert admission.tenant_named(scope(("authorization", "Bearer acme_99"))) == "acme"
    assert admission.tenant_named(scope(("authorization", "Bearer acme_99"), ("x-api-key", "beta_1"))) == "beta"
    assert admission.tenant_named(scope()) == admission.tenant_named(scope(("x-api-key", "nounderscore"))) == ""
