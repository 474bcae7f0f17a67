"""Execute -> completed latency on `sheetcalc dev`, and the warm per-job calculation time.

Starts the dev stack in a subprocess (SQLite, moto), deploys the sample loan workbook, then:
  1. sequential: N jobs one after another; latency = completed_at - created_at as the server
     recorded them, and as the client saw it (execute request sent -> poll saw "completed");
  2. burst: N jobs submitted at once by 8 threads; throughput in jobs/s until all completed;
  3. in-process: the warm IronCalc calculation alone (inputs in, recalculate, outputs out) and
     with the filled workbook written.
Usage: python bench/e2e_latency.py [--jobs 200]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
LOAN = REPO / "examples" / "loan-quote.xlsx"
INPUTS = {"principal": 250000, "annual_rate": 0.045, "years": 30, "start_date": "2026-01-01"}


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def start_stack(data_dir: Path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHEETCALC_") and k != "DATABASE_URL"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "shared.cli", "dev", "--port", str(port), "--data-dir", str(data_dir)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    for line in proc.stdout:
        if "ready" in line:
            break
    return proc, f"http://127.0.0.1:{port}", env


def deploy(base: str, data_dir: Path, env: dict) -> dict:
    made = subprocess.run(
        [sys.executable, "-m", "shared.cli", "create-tenant", "--slug", "bench", "--name", "Bench",
         "--admin-email", "bench@bench.example", "--data-dir", str(data_dir)],
        cwd=REPO, env=env, capture_output=True, text=True, check=True,
    )
    temp = json.loads(made.stdout)["temporary_password"]
    http = httpx.Client(base_url=base, timeout=30)
    tok = http.post("/auth/login", json={"email": "bench@bench.example", "password": temp}).json()["access_token"]
    http.post("/auth/change-password", headers={"Authorization": f"Bearer {tok}"},
              json={"current_password": temp, "new_password": "bench-password"})
    http.cookies.clear()
    tok = http.post("/auth/login", json={"email": "bench@bench.example", "password": "bench-password"}).json()["access_token"]
    http.cookies.clear()
    h = {"Authorization": f"Bearer {tok}"}
    engine = http.post("/engines", headers=h, json={"name": "Loan", "slug": "loan"}).json()
    v = http.post(f"/engines/{engine['id']}/versions", headers=h, data={"version": "1"},
                  files={"file": ("loan.xlsx", LOAN.read_bytes())}).json()
    http.post(f"/engines/{engine['id']}/versions/{v['id']}/activate", headers=h)
    c = http.post("/consumers", headers=h, json={"name": "bench"}).json()
    http.put(f"/engines/{engine['id']}/access/{c['id']}", headers=h,
             json={"can_execute": True, "can_view_jobs": True, "can_download": True, "can_view_about": True})
    return {"X-API-Key": c["api_key"]}


def wait_done(http, job_id, key):
    while True:
        job = http.get(f"/jobs/{job_id}", headers=key).json()
        if job["status"] in ("completed", "failed"):
            return job
        time.sleep(0.002)


def server_latency_ms(job) -> float:
    created = datetime.fromisoformat(job["created_at"].replace("Z", "+00:00"))
    done = datetime.fromisoformat(job["completed_at"].replace("Z", "+00:00"))
    return (done - created).total_seconds() * 1000


def sequential(base, key, n):
    http = httpx.Client(base_url=base, timeout=30)
    server, client = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        job_id = http.post("/jobs/execute/bench/loan", headers=key, json={"inputs": INPUTS}).json()["job_id"]
        job = wait_done(http, job_id, key)
        client.append((time.perf_counter() - t0) * 1000)
        assert job["status"] == "completed", job
        server.append(server_latency_ms(job))
    return server, client


def burst(base, key, n):
    def submit(_):
        with httpx.Client(base_url=base, timeout=30) as http:
            return http.post("/jobs/execute/bench/loan", headers=key, json={"inputs": INPUTS}).json()["job_id"]

    t0 = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(submit, range(n)))
    http = httpx.Client(base_url=base, timeout=30)
    jobs = [wait_done(http, j, key) for j in ids]
    elapsed = time.perf_counter() - t0
    return n / elapsed, [server_latency_ms(j) for j in jobs]


def warm_calc(n):
    from shared.calc import get_engine

    wb = get_engine("ironcalc").load_xlsx(LOAN.read_bytes())
    calc, full = [], []
    for i in range(n):
        inputs = {**INPUTS, "principal": 100000 + i}
        t0 = time.perf_counter()
        wb.calculate(inputs)
        calc.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        wb.calculate(inputs)
        wb.to_xlsx()
        full.append((time.perf_counter() - t0) * 1000)
    return calc, full


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, base, env = start_stack(Path(tmp))
        try:
            key = deploy(base, Path(tmp), env)
            sequential(base, key, 10)  # warm-up: caches, connections
            server, client = sequential(base, key, args.jobs)
            rate, burst_lat = burst(base, key, args.jobs)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(20)
    calc, full = warm_calc(1000)
    print(f"sequential, {args.jobs} jobs (execute -> completed):")
    print(f"  server-recorded  p50 {pct(server, 50):7.1f} ms   p95 {pct(server, 95):7.1f} ms")
    print(f"  client-observed  p50 {pct(client, 50):7.1f} ms   p95 {pct(client, 95):7.1f} ms  (incl. polling)")
    print(f"burst, {args.jobs} jobs from 8 threads: {rate:6.1f} jobs/s;"
          f" latency p50 {pct(burst_lat, 50):.1f} ms p95 {pct(burst_lat, 95):.1f} ms")
    print(f"warm calculation (loan workbook): p50 {statistics.median(calc) * 1000:.0f} us;"
          f" with the filled workbook written: p50 {statistics.median(full) * 1000:.0f} us")


if __name__ == "__main__":
    main()
