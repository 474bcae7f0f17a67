"""`sheetcalc dev` under attack from its own machine: a spoofed X-Forwarded-For, and a burst of
executes while `/health` is asked how the service is.

Each stack here is started as a user would (``python -m shared.cli dev``), so uvicorn's own
options are what is tested, not the app under a test client.
"""

from __future__ import annotations

import contextlib
import json
import signal
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import REPO, DevStack, _wait_until_ready, dev_stack_env, free_port

pytestmark = pytest.mark.e2e

LOAN = REPO / "examples" / "loan-quote.xlsx"
INPUTS = {"principal": 250000, "annual_rate": 0.045, "years": 30, "start_date": "2026-01-01"}
GRANT = {"can_execute": True, "can_view_jobs": True, "can_download": True, "can_view_about": True}
LISTED = "203.0.113.7"
DENIED = {"detail": "Access denied: IP address not in whitelist"}
# After a burst the worker is still busy with its jobs when SIGTERM comes: only a hang waits this long.
STOP_TIMEOUT_SECONDS = 120


@contextlib.contextmanager
def started_stack(root: Path, **env: str):
    """A ``sheetcalc dev`` of its own, with ``env`` added to the environment a user would have."""
    data_dir, log_path, port = root / "data", root / "dev-stack.log", free_port()
    full_env = {**dev_stack_env(), **env}
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "shared.cli", "dev", "--host", "127.0.0.1", "--port", str(port), "--data-dir", str(data_dir)],
            cwd=REPO, env=full_env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
    stack = DevStack(f"http://127.0.0.1:{port}", data_dir, process, log_path, full_env)
    try:
        _wait_until_ready(stack)
        yield stack
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            returncode = process.wait(STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            pytest.fail(f"sheetcalc dev ignored SIGTERM for {STOP_TIMEOUT_SECONDS} s:\n{stack.output()}")
    assert returncode == 0, f"sheetcalc dev exited with {returncode}:\n{stack.output()}"


def unique(slug: str) -> str:
    # The stacks share the run's PostgreSQL database, when there is one: a slug per run.
    return f"{slug}-{uuid.uuid4().hex[:8]}"


def deploy(stack: DevStack, slug: str) -> tuple[httpx.Client, dict, str, str]:
    """A tenant with the loan workbook active and a consumer granted everything, over HTTP.

    Returns the client, the administrator's headers, the engine id and the consumer's key."""
    http = httpx.Client(base_url=stack.base_url, timeout=60)
    made = stack.cli("create-tenant", "--slug", slug, "--name", slug, "--admin-email", f"admin@{slug}.example",
                     "--data-dir", str(stack.data_dir), timeout=300)
    assert made.returncode == 0, made.stderr
    password = json.loads(made.stdout)["temporary_password"]
    token = http.post("/auth/login", json={"email": f"admin@{slug}.example", "password": password}).json()["access_token"]
    r = http.post("/auth/change-password", headers={"Authorization": f"Bearer {token}"},
                  json={"current_password": password, "new_password": "a-long-new-password"})
    assert r.status_code == 200, r.text
    http.cookies.clear()
    token = http.post("/auth/login", json={"email": f"admin@{slug}.example", "password": "a-long-new-password"}).json()["access_token"]
    http.cookies.clear()
    admin = {"Authorization": f"Bearer {token}"}
    engine = http.post("/engines", headers=admin, json={"name": "Loan quote", "slug": "loan"}).json()
    r = http.post(f"/engines/{engine['id']}/versions", headers=admin, data={"version": "1.0"},
                  files={"file": ("loan-quote.xlsx", LOAN.read_bytes())})
    assert r.status_code == 201, r.text
    assert http.post(f"/engines/{engine['id']}/versions/{r.json()['id']}/activate", headers=admin).status_code == 200
    consumer = http.post("/consumers", headers=admin, json={"name": "app"}).json()
    assert http.put(f"/engines/{engine['id']}/access/{consumer['id']}", headers=admin, json=GRANT).status_code == 200
    return http, admin, engine["id"], consumer["api_key"]


def whitelist_only(http: httpx.Client, admin: dict, engine_id: str, entry: str) -> None:
    r = http.patch(f"/engines/{engine_id}", headers=admin, json={"ip_whitelist_enabled": True, "ip_whitelist": [entry]})
    assert r.status_code == 200, r.text


def execute_as(http: httpx.Client, slug: str, key: str, forwarded_for: str) -> httpx.Response:
    return http.post(f"/jobs/execute/{slug}/loan", headers={"X-API-Key": key, "X-Forwarded-For": forwarded_for},
                     json={"inputs": INPUTS})


def test_a_caller_on_the_same_machine_cannot_claim_a_whitelisted_address(dev_stack):
    # GIVEN an engine that admits only 203.0.113.7, served by `sheetcalc dev` with no trusted proxies
    slug = unique("spoof-plain")
    http, admin, engine_id, key = deploy(dev_stack, slug)
    whitelist_only(http, admin, engine_id, LISTED)

    # WHEN a caller on 127.0.0.1 says it forwards for 203.0.113.7
    r = execute_as(http, slug, key, LISTED)

    # THEN it is refused: its own address decides, not a header it wrote
    assert (r.status_code, r.json()) == (403, DENIED)


def test_with_a_trusted_proxy_configured_the_service_rule_believes_it(tmp_path):
    # GIVEN `sheetcalc dev` told that 127.0.0.1 is a proxy it trusts
    with started_stack(tmp_path, SHEETCALC_TRUSTED_PROXIES='["127.0.0.1"]') as stack:
        slug = unique("spoof-trusted")
        http, admin, engine_id, key = deploy(stack, slug)
        whitelist_only(http, admin, engine_id, LISTED)

        # WHEN that proxy forwards a request from 203.0.113.7, and another from an unlisted address
        admitted = execute_as(http, slug, key, LISTED)
        refused = execute_as(http, slug, key, "198.51.100.1")

    # THEN the service's own rule (SHEETCALC_TRUSTED_PROXIES) admits the first and refuses the second
    assert admitted.status_code == 202, admitted.text
    assert (refused.status_code, refused.json()) == (403, DENIED)


BURST = 600
# What this test tells apart is waiting behind the burst or not: a /health queued behind the burst
# waited most of it (36 s of a burst of about 45 s here, 6.6 s of 7 s in the issue). A probe that
# does not queue may still be slowed by a busy machine (3.5 s of a 12 s burst in one CI run on two
# cores shared with the burst), so the bound is half of the burst's time, and never under 5 s. How
# fast /health answers is the benchmark's to measure (bench/throughput.py), not this test's.
HEALTH_BOUND_SECONDS = 5.0
HEALTH_SHARE_OF_BURST = 0.5


def burst_of_executes(base_url: str, slug: str, key: str, count: int) -> subprocess.Popen:
    """``count`` executes from one key, all sent at once by another process (so that its work does
    not slow this one's probes); it prints their statuses as JSON."""
    script = f"""
import asyncio, json, httpx
async def run():
    limits = httpx.Limits(max_connections={count}, max_keepalive_connections={count})
    async with httpx.AsyncClient(base_url={base_url!r}, timeout=300, limits=limits) as client:
        async def one():
            r = await client.post({f"/jobs/execute/{slug}/loan"!r}, headers={{"X-API-Key": {key!r}}}, json={{"inputs": {INPUTS!r}}})
            return r.status_code
        return await asyncio.gather(*(one() for _ in range({count})))
print(json.dumps(asyncio.run(run())))
"""
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)


def test_health_answers_quickly_while_one_key_sends_600_executes_at_once(tmp_path):
    with started_stack(tmp_path) as stack:
        # GIVEN a consumer of a deployed engine
        slug = unique("burst")
        _, _, _, key = deploy(stack, slug)

        # WHEN it sends 600 executes at once, and /health is asked meanwhile
        sender = burst_of_executes(stack.base_url, slug, key, BURST)
        burst_started = time.monotonic()
        time.sleep(0.5)
        latencies: list[float] = []
        with httpx.Client(base_url=stack.base_url, timeout=120) as probe:
            while sender.poll() is None:
                started = time.monotonic()
                r = probe.get("/health")
                latencies.append(time.monotonic() - started)
                assert r.status_code == 200, r.text
                time.sleep(0.1)
        burst_seconds = time.monotonic() - burst_started
        statuses = json.loads(sender.communicate(timeout=STOP_TIMEOUT_SECONDS)[0])
        server_output = stack.output()

    print(f"/health during a burst of {BURST} executes answered in {burst_seconds:.1f} s: {len(latencies)} probes, "
          f"median {statistics.median(latencies) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms")
    # THEN every execute is accepted (no limits in dev by default) AND /health never waited behind them
    assert statuses == [202] * BURST, server_output[-20000:]
    assert latencies, "the burst ended before /health could be asked"
    assert max(latencies) < max(HEALTH_BOUND_SECONDS, HEALTH_SHARE_OF_BURST * burst_seconds), sorted(latencies)[-5:]
