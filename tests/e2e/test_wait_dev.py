"""`sheetcalc dev` with 50 consumers waiting at once (execute?wait=25): each gets its job's answer
in its one call, woken by the worker's completion, while /health and other requests still answer.

Fifty waiters are more than the database pool's 15 connections and the threadpool's 40 threads:
a waiter holding either would starve the rest (pool timeouts, 500s) or stall /health.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx
import pytest

from tests.e2e.test_abuse_brakes import INPUTS, deploy, unique

pytestmark = pytest.mark.e2e

WAITERS = 50
WAIT_SECONDS = 25
HANG_SECONDS = 300


def annuity(principal, annual_rate, years, **_):
    """The loan's monthly payment by the annuity formula Excel's PMT documents."""
    r, n = annual_rate / 12, years * 12
    return principal * r / (1 - (1 + r) ** -n)


def waiters(base_url: str, slug: str, key: str) -> subprocess.Popen:
    """``WAITERS`` executes with wait, sent at once by another process; prints [status, seconds, body] each."""
    script = f"""
import asyncio, json, time, httpx
async def run():
    limits = httpx.Limits(max_connections={WAITERS}, max_keepalive_connections={WAITERS})
    async with httpx.AsyncClient(base_url={base_url!r}, timeout={HANG_SECONDS}, limits=limits) as client:
        async def one(i):
            started = time.monotonic()
            r = await client.post({f"/jobs/execute/{slug}/loan"!r}, params={{"wait": "{WAIT_SECONDS}"}},
                                  headers={{"X-API-Key": {key!r}}}, json={{"inputs": {{**{INPUTS!r}, "principal": 1000 * (i + 1)}}}})
            return [r.status_code, time.monotonic() - started, r.json()]
        return await asyncio.gather(*(one(i) for i in range({WAITERS})))
print(json.dumps(asyncio.run(run())))
"""
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)


def test_fifty_consumers_waiting_at_once_get_their_answers_and_health_still_answers(dev_stack):
    # GIVEN a consumer of a deployed engine
    slug = unique("wait")
    http, _, _, key = deploy(dev_stack, slug)

    # WHEN 50 executes with wait=25 arrive at once, and /health is asked meanwhile
    sender = waiters(dev_stack.base_url, slug, key)
    probes: list[int] = []
    with httpx.Client(base_url=dev_stack.base_url, timeout=HANG_SECONDS) as probe:
        while sender.poll() is None:
            probes.append(probe.get("/health").status_code)
            time.sleep(0.1)
    answers = json.loads(sender.communicate(timeout=HANG_SECONDS)[0])

    # THEN /health answered throughout
    assert probes and set(probes) == {200}, probes
    # AND each waiter got its finished job in its one call (200, the body GET gives), or, only if
    # the worker did not finish it within the 25 s, the 202 of today after the whole wait
    finished = [a for a in answers if a[0] == 200]
    print(f"{len(finished)} of {WAITERS} answered with the finished job in one call; "
          f"slowest {max(a[1] for a in answers):.1f} s")
    for i, (status, seconds, body) in enumerate(answers):
        assert status in (200, 202), (status, body, dev_stack.output()[-5000:])
        if status == 202:
            assert seconds >= WAIT_SECONDS and body["status"] in ("pending", "processing")
            continue
        assert body["status"] == "completed"
        assert body["outputs"]["monthly_payment"] == pytest.approx(annuity(**{**INPUTS, "principal": 1000 * (i + 1)}), rel=1e-9)
        assert body == http.get(f"/jobs/{body['job_id']}", headers={"X-API-Key": key}).json()
    assert "QueuePool limit" not in dev_stack.output()
