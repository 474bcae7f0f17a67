"""/health and accepting during a burst of executes from one key, against `sheetcalc dev`.

Starts `sheetcalc dev` (SQLite, or with --db postgresql a scratch database made and dropped as
bench/throughput.py does) with the production defaults of every brake (rate limit, quotas, waiters,
admission; --env NAME=VALUE adds settings), deploys the sample loan workbook as tenant "bench"
(or, with --base-url and --api-key, uses a dev server already running with it), and a second
tenant "neighbour" with the same workbook. Then:

  1. another process sends --burst executes (600) from the bench key, all at once; each that is
     pushed back (429 or 503) is sent again after its Retry-After, until accepted (202) or
     refused otherwise, so every job of the burst is eventually asked for as a client would;
  2. meanwhile this process asks GET /health every --probe-interval seconds (0.05), one at a
     time, and the neighbour executes one job every 0.5 s with wait=25 (its time to be
     answered is how long another tenant's job took during the burst).

Prints /health p50/p99/max and its failures, the burst's first answers by status, the time from
sending to acceptance (p50/p99, retries included), the neighbour's answers, and the machine's
load average before and after. Usage:
    python bench/burst.py [--burst 600] [--wait N] [--db sqlite|postgresql] [--env SHEETCALC_X=Y ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from throughput import INPUTS, PG_ADMIN_URL, deploy, dev_stack, percentile, scratch_postgres  # noqa: E402

# Only a hang reaches these.
HANG_SECONDS = 300
NEIGHBOUR_EVERY_SECONDS = 0.5

# The burst's sender: a process of its own, each execute on a keep-alive connection of its own,
# spoken in plain HTTP/1.1 over asyncio streams (as throughput.LeanClient: httpx's client spent
# about 10 ms of CPU per request here, so 600 at once measured the client, not the server).
SENDER = """
import asyncio, json, sys, time
host, port, path, key, count, inputs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6]
body = json.dumps({"inputs": json.loads(inputs)}).encode()
head = (f"POST {path} HTTP/1.1\\r\\nHost: {host}:{port}\\r\\nContent-Type: application/json\\r\\n"
        f"X-API-Key: {key}\\r\\nContent-Length: {len(body)}\\r\\n\\r\\n").encode()

async def exchange(streams):
    reader, writer = streams
    writer.write(head + body)
    status = int((await reader.readuntil(b"\\r\\n")).split(b" ", 2)[1])
    headers = {}
    for line in (await reader.readuntil(b"\\r\\n\\r\\n")).split(b"\\r\\n"):
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    await reader.readexactly(int(headers[b"content-length"]))
    return status, headers

async def one():
    streams = await asyncio.open_connection(host, port)
    started, first, attempts = time.monotonic(), None, 0
    try:
        while True:
            attempts += 1
            sent = time.monotonic()
            status, headers = await exchange(streams)
            if first is None:
                first = [status, time.monotonic() - sent]
            if status in (429, 503) and b"retry-after" in headers:
                await asyncio.sleep(float(headers[b"retry-after"]))
                continue
            return {"first": first, "final": status, "seconds": time.monotonic() - started, "attempts": attempts}
    finally:
        streams[1].close()

async def run():
    return await asyncio.gather(*(one() for _ in range(count)))
print(json.dumps(asyncio.run(run())))
"""


def _ms(values: list[float], q: float) -> str:
    value = percentile(values, q)
    return "-" if value is None else f"{value * 1000:.0f} ms"


def _s(values: list[float], q: float) -> str:
    value = percentile(values, q)
    return "-" if value is None else f"{value:.2f} s"


class Neighbour(threading.Thread):
    """Another tenant's consumer: one execute with wait=25 every 0.5 s until stopped."""

    def __init__(self, base: str, key: dict):
        super().__init__(daemon=True)
        self.base, self.key = base, key
        self.answers: list[tuple[int, float]] = []
        self._stopping = threading.Event()

    def run(self) -> None:
        with httpx.Client(base_url=self.base, timeout=HANG_SECONDS) as http:
            while not self._stopping.is_set():
                started = time.monotonic()
                r = http.post("/jobs/execute/neighbour/loan", params={"wait": "25"}, headers=self.key, json={"inputs": INPUTS})
                self.answers.append((r.status_code, time.monotonic() - started))
                self._stopping.wait(NEIGHBOUR_EVERY_SECONDS)

    def stop(self) -> None:
        self._stopping.set()
        self.join(HANG_SECONDS)


def run(base: str, key: dict, neighbour_key: dict | None, count: int, probe_interval: float, wait: int | None = None) -> dict:
    url = httpx.URL(base)
    path = "/jobs/execute/bench/loan" + (f"?wait={wait}" if wait else "")
    sender = subprocess.Popen(
        [sys.executable, "-c", SENDER, url.host, str(url.port), path, key["X-API-Key"], str(count), json.dumps(INPUTS)],
        stdout=subprocess.PIPE, text=True,
    )
    neighbour = Neighbour(base, neighbour_key) if neighbour_key else None
    if neighbour:
        neighbour.start()
    started = time.monotonic()
    health: list[float] = []
    slowest: list[tuple[float, float]] = []  # (seconds into the burst, latency) of probes over 50 ms
    failures: Counter = Counter()
    with httpx.Client(base_url=base, timeout=10) as probe:
        while sender.poll() is None:
            sent = time.monotonic()
            try:
                r = probe.get("/health")
                health.append(time.monotonic() - sent)
                if health[-1] > 0.05:
                    slowest.append((round(sent - started, 2), round(health[-1], 3)))
                if r.status_code != 200:
                    failures[str(r.status_code)] += 1
            except httpx.HTTPError as exc:
                failures[type(exc).__name__] += 1
            time.sleep(probe_interval)
    burst_seconds = time.monotonic() - started
    answers = json.loads(sender.communicate(timeout=HANG_SECONDS)[0])
    if neighbour:
        neighbour.stop()
    return {"burst": count, "wait": f" with wait={wait}" if wait else "", "burst_seconds": burst_seconds, "health": health, "health_slowest": slowest,
            "health_failures": dict(failures),
            "answers": answers, "neighbour": neighbour.answers if neighbour else []}


def report(result: dict, load_before, load_after) -> str:
    health, answers = result["health"], result["answers"]
    first = Counter(a["first"][0] for a in answers)
    final = Counter(a["final"] for a in answers)
    accepted = [a["seconds"] for a in answers if a["final"] in (200, 202)]
    first_accepted = [a["first"][1] for a in answers if a["first"][0] in (200, 202)]
    pushed_back = [a["first"][1] for a in answers if a["first"][0] in (429, 503)]
    lines = [
        f"{os.cpu_count()} cores, load average before {load_before}, after {load_after}",
        f"burst of {result['burst']} executes{result['wait']} from one key, all answered after {result['burst_seconds']:.1f} s",
        f"/health, {len(health)} probes: p50 {_ms(health, 50)}, p99 {_ms(health, 99)}, max {_ms(health, 100)}; "
        f"failures {result['health_failures'] or 'none'}; over 50 ms (s into the burst, s): {result['health_slowest'] or 'none'}",
        f"first answers: {dict(sorted(first.items()))}; accepted at once p50 {_ms(first_accepted, 50)}, p99 {_ms(first_accepted, 99)};"
        f" pushed back p50 {_ms(pushed_back, 50)}, p99 {_ms(pushed_back, 99)}",
        f"sent -> accepted (retries after Retry-After included): p50 {_s(accepted, 50)}, p99 {_s(accepted, 99)}, "
        f"max {_s(accepted, 100)}; final answers {dict(sorted(final.items()))}; "
        f"attempts p50 {percentile([a['attempts'] for a in answers], 50)}, max {max(a['attempts'] for a in answers)}",
    ]
    if result["neighbour"]:
        statuses = Counter(s for s, _ in result["neighbour"])
        seconds = [t for _, t in result["neighbour"]]
        lines.append(f"another tenant's execute?wait=25 meanwhile, {len(seconds)} calls: {dict(sorted(statuses.items()))}; "
                     f"answered p50 {_s(seconds, 50)}, p99 {_s(seconds, 99)}, max {_s(seconds, 100)}")
    return "\n".join(lines)


def _deploy_neighbour(stack) -> dict:
    """Tenant "neighbour" with the loan workbook, as throughput.deploy makes "bench"."""
    import throughput

    made = subprocess.run(
        [sys.executable, "-m", "shared.cli", "create-tenant", "--slug", "neighbour", "--name", "Neighbour",
         "--admin-email", "admin@neighbour.example", "--data-dir", str(stack.data_dir)],
        cwd=throughput.REPO, env=stack.env, capture_output=True, text=True, check=True,
    )
    temporary = json.loads(made.stdout)["temporary_password"]
    http = httpx.Client(base_url=stack.base, timeout=60)
    token = http.post("/auth/login", json={"email": "admin@neighbour.example", "password": temporary}).json()["access_token"]
    http.post("/auth/change-password", headers={"Authorization": f"Bearer {token}"},
              json={"current_password": temporary, "new_password": "neighbour-password-1"}).raise_for_status()
    http.cookies.clear()
    token = http.post("/auth/login", json={"email": "admin@neighbour.example", "password": "neighbour-password-1"}).json()["access_token"]
    http.cookies.clear()
    auth = {"Authorization": f"Bearer {token}"}
    engine = http.post("/engines", headers=auth, json={"name": "Loan", "slug": "loan"}).json()
    version = http.post(f"/engines/{engine['id']}/versions", headers=auth, data={"version": "1"},
                        files={"file": ("loan.xlsx", throughput.LOAN.read_bytes())}).json()
    http.post(f"/engines/{engine['id']}/versions/{version['id']}/activate", headers=auth).raise_for_status()
    consumer = http.post("/consumers", headers=auth, json={"name": "neighbour"}).json()
    http.put(f"/engines/{engine['id']}/access/{consumer['id']}", headers=auth,
             json={"can_execute": True, "can_view_jobs": True, "can_download": True, "can_view_about": True}).raise_for_status()
    return {"X-API-Key": consumer["api_key"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--burst", type=int, default=600)
    parser.add_argument("--probe-interval", type=float, default=0.05)
    parser.add_argument("--wait", type=int, default=None, help="the burst's executes wait (execute?wait=N; 200 or 202)")
    parser.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--pg-admin-url", default=os.environ.get("SHEETCALC_BENCH_PG_ADMIN_URL", PG_ADMIN_URL))
    parser.add_argument("--env", action="append", default=[], metavar="SHEETCALC_NAME=VALUE",
                        help="a setting for the dev stack (repeatable); default: the production defaults")
    parser.add_argument("--base-url", help="a running dev server with tenant bench, engine loan active")
    parser.add_argument("--api-key", help="the bench consumer's key (with --base-url)")
    parser.add_argument("--json", action="store_true", help="print the raw figures as JSON too")
    args = parser.parse_args()
    load_before = [round(x, 2) for x in os.getloadavg()]
    if args.base_url:
        result = run(args.base_url, {"X-API-Key": args.api_key}, None, args.burst, args.probe_interval, args.wait)
    else:
        env = dict(item.split("=", 1) for item in args.env)
        with tempfile.TemporaryDirectory() as tmp:
            if args.db == "postgresql":
                with scratch_postgres(args.pg_admin_url) as url, dev_stack(Path(tmp), url, env=env) as stack:
                    result = run(stack.base, deploy(stack), _deploy_neighbour(stack), args.burst, args.probe_interval, args.wait)
            else:
                with dev_stack(Path(tmp), None, env=env) as stack:
                    result = run(stack.base, deploy(stack), _deploy_neighbour(stack), args.burst, args.probe_interval, args.wait)
    load_after = [round(x, 2) for x in os.getloadavg()]
    print(report(result, load_before, load_after))
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
