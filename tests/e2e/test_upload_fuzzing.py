"""Upload fuzzing against `sheetcalc dev` (issue 14): truncated zips, missing parts, bombs, deep and
long formulas, many names, macro-enabled files, a renamed CSV. Each is a clear 4xx, `/health`
keeps answering fast while they are refused, the server's memory stays small, and afterwards it
still takes a normal upload and computes a job."""

from __future__ import annotations

import json
import statistics
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest

from tests import hostile
from tests.load import load_factor

pytestmark = pytest.mark.e2e

LOAN = Path(__file__).resolve().parents[2] / "examples" / "loan-quote.xlsx"
GRANT = {"can_execute": True, "can_view_jobs": True, "can_download": True, "can_view_about": True}
# Issue 14 asks for /health under 200 ms throughout; that figure is measured and printed here and in
# the README. The verdict only tells "answered while a refusal is under way" from "blocked behind
# it", with room for a busy machine (no test depends on how fast the machine is): on a machine busier
# than its cores it is multiplied by how many times over (tests/load.py).
HEALTH_BUDGET_S = 1.0
# Only a hung server reaches these: no verdict depends on the machine's speed.
REQUEST_TIMEOUT_S = 120.0
DEADLINE_S = 300.0

ATTACKS = [
    # name, file, status, what the message says
    ("600 MB zip bomb", lambda: hostile.zip_bomb(600), 400, "inflates to 600 MB, over the 128 MB limit"),
    ("sheet bomb", hostile.sheet_bomb, 400, "times its compressed size, over the 100-fold limit"),
    ("1,000,010 cells", lambda: hostile.many_cells(1_000_010), 400, "more than 1,000,000 cells"),
    ("50,000 defined names", hostile.many_names, 400, "more than 2,000 defined names"),
    ("3,000-deep formula", hostile.deep_formula, 400, "nests parentheses more than 64 levels deep"),
    ("9,000-character formula", hostile.long_formula, 400, "longer than 8,192 characters"),
    ("entity bomb", hostile.entity_bomb, 400, "declares a DTD"),
    ("10,001 parts", lambda: hostile.many_parts(10_001), 400, "more than 10,000 parts"),
    ("macro-enabled", hostile.macro_enabled, 400, "Macro-enabled workbooks are not accepted"),
    ("truncated zip", hostile.truncated, 422, "the zip package is truncated"),
    ("half a zip", lambda: hostile.workbook()[:700], 422, "the zip package is truncated"),
    ("no [Content_Types].xml", lambda: hostile.workbook(leave_out=("[Content_Types].xml",)), 422,
     "no [Content_Types].xml part"),
    ("no workbook part", lambda: hostile.workbook(leave_out=("xl/workbook.xml",)), 422, "no xl/workbook.xml part"),
    ("renamed CSV", lambda: hostile.RENAMED_CSV, 422, "it is not a zip package"),
    ("zip header then zeros", lambda: b"PK\x03\x04" + b"\0" * 5000, 422, "not a readable .xlsx workbook"),
]


def _memory_kb(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak resident set) of a process, in KB, from /proc."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0])
    return fields


class HealthProbe(threading.Thread):
    """Asks /health back to back on its own connection, recording when and how long each took."""

    def __init__(self, base_url: str):
        super().__init__(daemon=True)
        self.http = httpx.Client(base_url=base_url, timeout=REQUEST_TIMEOUT_S)
        self.samples: list[tuple[float, float, int]] = []  # (started, seconds, status)
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            started = time.monotonic()
            status = self.http.get("/health").status_code
            self.samples.append((started, time.monotonic() - started, status))
            time.sleep(0.02)

    def between(self, start: float, end: float) -> list[float]:
        return [seconds for began, seconds, _ in self.samples if start <= began <= end]


def _admin(dev_stack, http: httpx.Client, slug: str) -> dict[str, str]:
    email = f"admin@{slug}.example"
    made = dev_stack.cli("create-tenant", "--slug", slug, "--name", "Fuzz", "--admin-email", email,
                         "--data-dir", str(dev_stack.data_dir), timeout=DEADLINE_S)
    assert made.returncode == 0, made.stderr
    password = json.loads(made.stdout)["temporary_password"]
    token = http.post("/auth/login", json={"email": email, "password": password}).json()["access_token"]
    assert http.post("/auth/change-password", headers={"Authorization": f"Bearer {token}"},
                     json={"current_password": password, "new_password": "a-long-new-password"}).status_code == 200
    http.cookies.clear()
    token = http.post("/auth/login", json={"email": email, "password": "a-long-new-password"}).json()["access_token"]
    http.cookies.clear()
    return {"Authorization": f"Bearer {token}"}


def test_hostile_uploads_are_refused_clearly_while_the_server_stays_fast_and_small(dev_stack):
    http = httpx.Client(base_url=dev_stack.base_url, timeout=REQUEST_TIMEOUT_S)
    slug = f"fuzz-{uuid.uuid4().hex[:8]}"  # the PostgreSQL database outlives a run
    admin = _admin(dev_stack, http, slug)
    engine = http.post("/engines", headers=admin, json={"name": "Fuzzed", "slug": "fuzzed"}).json()
    versions = f"/engines/{engine['id']}/versions"
    files = {name: build() for name, build, _, _ in ATTACKS}  # built before the clock starts
    pid = dev_stack.process.pid
    before = _memory_kb(pid)
    busy = load_factor()
    probe = HealthProbe(dev_stack.base_url)
    probe.start()
    answers, windows = {}, {}
    try:
        # WHEN each hostile file is uploaded, one after another
        for number, (name, _build, _status, _message) in enumerate(ATTACKS, start=1):
            started = time.monotonic()
            answers[name] = http.post(versions, headers=admin, data={"version": str(number)},
                                      files={"file": (f"{number}.xlsx", files[name])})
            windows[name] = (started, time.monotonic())
            time.sleep(0.3)  # a few /health samples between uploads
    finally:
        probe.stopping.set()
        probe.join(REQUEST_TIMEOUT_S)
    after = _memory_kb(pid)
    busy = max(busy, load_factor())

    # THEN each is a clear 4xx that says what is wrong, and nothing was stored
    for name, _build, status, message in ATTACKS:
        r = answers[name]
        assert (r.status_code, message in r.json().get("detail", "")) == (status, True), f"{name}: {r.status_code} {r.text}"
    assert http.get(f"/engines/{engine['id']}", headers=admin).json()["versions"] == []

    # AND /health answered, and fast, throughout: during each refusal or in the 0.3 s after it
    assert probe.samples and all(status == 200 for _, _, status in probe.samples)
    fastest = {name: min(probe.between(start, end + 0.3), default=None) for name, (start, end) in windows.items()}
    everything = [seconds for _, seconds, _ in probe.samples]
    print(f"\n/health: {len(everything)} answers while refusing, median {statistics.median(everything) * 1000:.1f} ms, "
          f"slowest {max(everything) * 1000:.1f} ms")
    for name, (start, end) in windows.items():
        around = probe.between(start, end + 0.3)
        print(f"  {name}: refused in {(end - start) * 1000:.0f} ms; /health around it: {len(around)} answers, "
              f"fastest {(fastest[name] or 0) * 1000:.1f} ms, slowest {max(around, default=0) * 1000:.1f} ms")
    assert all(seconds is not None and seconds < HEALTH_BUDGET_S * busy for seconds in fastest.values()), (busy, fastest)

    # AND the server's memory peak stayed small (the bombs were refused unread)
    print(f"server memory: resident {before['VmRSS'] // 1024} MB before, peak {after['VmHWM'] // 1024} MB "
          f"after refusing every attack (peak before: {before['VmHWM'] // 1024} MB)")
    assert after["VmHWM"] - before["VmHWM"] < 200 * 1024

    # AND the server is still up and serves a normal upload and a job
    assert dev_stack.process.poll() is None
    r = http.post(versions, headers=admin, data={"version": "1.0"}, files={"file": ("loan-quote.xlsx", LOAN.read_bytes())})
    assert r.status_code == 201, r.text
    version = r.json()
    assert http.post(f"{versions}/{version['id']}/activate", headers=admin).status_code == 200
    consumer = http.post("/consumers", headers=admin, json={"name": "after the fuzzing"}).json()
    assert http.put(f"/engines/{engine['id']}/access/{consumer['id']}", headers=admin, json=GRANT).status_code == 200
    key = {"X-API-Key": consumer["api_key"]}
    job_id = http.post(f"/jobs/execute/{slug}/fuzzed", headers=key,
                       json={"inputs": {"principal": 1000, "annual_rate": 0.12, "years": 1}}).json()["job_id"]
    deadline = time.monotonic() + DEADLINE_S
    while (job := http.get(f"/jobs/{job_id}", headers=key).json())["status"] not in ("completed", "failed"):
        assert time.monotonic() < deadline, job
        time.sleep(0.1)
    assert job["status"] == "completed", job
    assert isinstance(job["outputs"]["monthly_payment"], float)
