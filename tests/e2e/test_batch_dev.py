"""Consumer additions on a real `sheetcalc dev`: a batch of 2,000 input sets (four chunk messages
of 500) through the API, the jobs queue and the worker poller, finished and read back in order;
20 concurrent executes with one Idempotency-Key make one job."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.e2e.console import deployed_loan

pytestmark = pytest.mark.e2e

# A fallback only: the verdict is the batch's state, never how fast it got there.
DEADLINE_SECONDS = 300.0


def annuity(principal, annual_rate, years):
    # Excel's PMT for a loan paid monthly (fv = 0, type = 0).
    r, n = annual_rate / 12, years * 12
    return principal * r / (1 - (1 + r) ** -n)


def test_twenty_concurrent_executes_with_one_key_make_one_job_on_the_dev_server(dev_stack):
    tenant, engine, key = deployed_loan(dev_stack, "idem")
    path = f"/jobs/execute/{tenant['slug']}/{engine['slug']}"
    body = {"inputs": {"principal": 250000, "annual_rate": 0.045, "years": 30}}
    with httpx.Client(base_url=dev_stack.base_url, timeout=120) as http, ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(lambda _: http.post(path, headers={**key, "Idempotency-Key": "once-1"}, json=body), range(20)))
        assert {r.status_code for r in answers} == {202}, [r.text for r in answers]
        assert len({r.json()["job_id"] for r in answers}) == 1
        other = http.post(path, headers={**key, "Idempotency-Key": "once-1"}, json={"inputs": {"principal": 1}})
        assert other.status_code == 409


def test_a_batch_of_two_thousand_finishes_on_the_dev_server_with_every_result_in_order(dev_stack):
    # GIVEN the loan workbook deployed and a consumer allowed to run it
    tenant, engine, key = deployed_loan(dev_stack, "bat")
    sets = [{"principal": 100000 + 10 * i, "annual_rate": 0.04, "years": 20} for i in range(2000)]
    sets[1234] = {"principal": [1, 2]}  # a list for a one-cell input
    http = httpx.Client(base_url=dev_stack.base_url, timeout=120)

    # WHEN they are sent as one batch
    r = http.post(f"/jobs/batch/{tenant['slug']}/{engine['slug']}", headers=key, json={"inputs": sets})
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["jobs"] == 1999 and [item["index"] for item in body["invalid"]] == [1234]
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not (status := http.get(f"/jobs/batch/{body['batch_id']}", headers=key).json())["done"]:
        assert time.monotonic() < deadline, status
        time.sleep(0.2)

    # THEN every valid set completed, and the results come back one per set, in order, with Excel's answers
    assert status["counts"] == {"pending": 0, "processing": 0, "completed": 1999, "failed": 0, "invalid": 1}
    lines = [json.loads(line) for line in http.get(f"/jobs/batch/{body['batch_id']}/results", headers=key).text.splitlines()]
    assert [line["index"] for line in lines] == list(range(2000))
    assert lines[1234]["status"] == "invalid"
    for i in (0, 999, 1999):
        assert lines[i]["outputs"]["monthly_payment"] == pytest.approx(annuity(100000 + 10 * i, 0.04, 20), rel=1e-12)
