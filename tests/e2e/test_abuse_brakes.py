"""`sheetcalc dev` under attack from its own machine: a spoofed X-Forwarded-For, and a burst of
executes while `/health` is asked how the service is.

Each stack here is started as a user would (``python -m shared.cli dev``), so uvicorn's own
options are what is tested, not the app under a test client, and with the brakes' production
defaults (the rate limit, the quotas, the waiters' and admission's bounds), not the raised ones
of the other end-to-end tests.
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

from tests.e2e.conftest import (
    RAISED_LIMITS,
    REPO,
    DevStack,
    _wait_until_ready,
    dev_stack_env,
    free_port,
)
from tests.load import load_factor

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
    """A ``sheetcalc dev`` of its own, with ``env`` added to the environment a user would have
    (the brakes at their defaults)."""
    data_dir, log_path, port = root / "data", root / "dev-stack.log", free_port()
    full_env = {**{k: v for k, v in dev_stack_env().items() if k not in RAISED_LIMITS}, **env}
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
# What this test tells apart is /health waiting behind the burst or not: before admission control
# a /health behind a burst of 600 executes took 3.7 to 6.5 s in the issue (0.4 s at the 99th
# percentile and 0.8 s at most on a quiet machine, load 5), after it 60 to 100 ms at the 99th
# percentile (bench/burst.py, which measures the figure; README, Security). The bounds here are a
# tenth of the and hold on a loaded machine too: a probe still shares two cores with the
# burst, the server's four processes and every other test; on a machine busier than its cores they
# are multiplied by how many times over (tests/load.py), the busiest of before and after the burst.
HEALTH_P99_BOUND_SECONDS = 1.0
HEALTH_MAX_BOUND_SECONDS = 2.0


def burst_of_executes(base_url: str, slug: str, key: str, count: int) -> subprocess.Popen:
    """``count`` executes from one key, all sent at once by another process (so that its work does
    not slow this one's probes), each on a connection of its own in plain HTTP/1.1 (a client that
    costs the machine little); one pushed back (429, 503) is sent again after its Retry-After.
    It prints, for each, its answers' statuses and their Retry-After values as JSON."""
    url = httpx.URL(base_url)
    body = json.dumps({"inputs": INPUTS})
    script = f"""
import asyncio, json
head = ("POST /jobs/execute/{slug}/loan HTTP/1.1\\r\\nHost: {url.host}\\r\\nContent-Type: application/json\\r\\n"
        "X-API-Key: {key}\\r\\nContent-Length: {len(body)}\\r\\n\\r\\n").encode() + {body!r}.encode()
async def one():
    reader, writer = await asyncio.open_connection({url.host!r}, {url.port})
    answers = []
    try:
        while True:
            writer.write(head)
            status = int((await reader.readuntil(b"\\r\\n")).split(b" ", 2)[1])
            headers = {{}}
            for line in (await reader.readuntil(b"\\r\\n\\r\\n")).split(b"\\r\\n"):
                name, _, value = line.partition(b":")
                headers[name.strip().lower().decode()] = value.strip().decode()
            await reader.readexactly(int(headers["content-length"]))
            answers.append([status, headers.get("retry-after")])
            if status not in (429, 503) or "retry-after" not in headers:
                return answers
            await asyncio.sleep(float(headers["retry-after"]))
    finally:
        writer.close()
async def run():
    return await asyncio.gather(*(one() for _ in range({count})))
print(json.dumps(asyncio.run(run())))
"""
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)


def test_health_answers_quickly_while_one_key_sends_600_executes_at_once(tmp_path):
    with started_stack(tmp_path) as stack:
        # GIVEN a consumer of a deployed engine, and the brakes at their defaults
        slug = unique("burst")
        _, _, _, key = deploy(stack, slug)

        # WHEN it sends 600 executes at once (each pushed back sent again after its Retry-After),
        # and /health is asked meanwhile
        busy = load_factor()
        sender = burst_of_executes(stack.base_url, slug, key, BURST)
        burst_started = time.monotonic()
        latencies: list[float] = []
        with httpx.Client(base_url=stack.base_url, timeout=120) as probe:
            while sender.poll() is None:
                started = time.monotonic()
                r = probe.get("/health")
                latencies.append(time.monotonic() - started)
                assert r.status_code == 200, r.text
                time.sleep(0.05)
        burst_seconds = time.monotonic() - burst_started
        busy = max(busy, load_factor())
        answers = json.loads(sender.communicate(timeout=STOP_TIMEOUT_SECONDS)[0])
        server_output = stack.output()

    p99 = statistics.quantiles(latencies, n=100, method="inclusive")[98] if len(latencies) > 1 else latencies[0]
    pushed_back = sum(len(a) - 1 for a in answers)
    print(f"/health during a burst of {BURST} executes answered in {burst_seconds:.1f} s ({pushed_back} answers pushed "
          f"back): {len(latencies)} probes, median {statistics.median(latencies) * 1000:.0f} ms, "
          f"p99 {p99 * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms; bounds x{busy:.1f} for the machine's load")
    # THEN every execute is accepted in the end (600 fit the key's default rate), each answer
    # before it pushed back with 429 or 503 and a Retry-After
    assert [a[-1][0] for a in answers] == [202] * BURST, server_output[-20000:]
    assert all(status in (429, 503) and retry for a in answers for status, retry in a[:-1]), answers
    # AND /health never waited behind the burst
    assert latencies, "the burst ended before /health could be asked"
    assert p99 < HEALTH_P99_BOUND_SECONDS * busy and max(latencies) < HEALTH_MAX_BOUND_SECONDS * busy, (busy, sorted(latencies)[-5:])
