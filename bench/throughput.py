"""Jobs per second and what they cost, measured from outside a running `sheetcalc dev`.

For each database (SQLite in a temporary data dir; PostgreSQL in a scratch database created and
dropped here, as scripts/pgdb.py does) it starts `sheetcalc dev` as a subprocess, deploys the
sample workbook (examples/loan-quote.xlsx) through the CLI and the management API, then for each
concurrency level runs that many clients, each one looping execute -> wait until completed:

  - by `GET /jobs/{id}?wait=N` when the server's OpenAPI document lists a `wait` parameter,
    else by polling every --poll-interval seconds; with --one-call, by `POST execute?wait=N`
    itself (one request per job: 200 with the finished job, or 202 and then as above);
  - for --duration seconds (clients start no new job after it; the jobs in flight finish), or
    until --jobs jobs when given; with a duration, the clients first run --settle seconds (2)
    unrecorded, so that a level's figures are its steady state, not its first burst.

It reports, per level: sustained jobs/s (jobs completed / time until the last one completed),
execute -> completed latency as the client saw it and as the server recorded it
(`completed_at - created_at`), p50/p95/p99; server CPU per job (utime + stime of the dev
server's whole process tree from /proc, after minus before, over jobs); the tree's RSS at the
start and the end; `/health` latency (p50 / p99 / max) probed every 0.25 s from another thread
while the level runs; the machine's 1-minute load average at its end; the CPU probe (CpuSpeedProbe:
how long a fixed loop takes on this machine during the level, to compare hours); with
--timeline, the level's jobs/s and CPU per job second by second. Last, the calculation alone in
this process (--calc-jobs), the floor a job's cost is compared with. `--memory-jobs N` then runs N
more jobs at 16 clients and samples the tree's RSS every N/10 jobs (the "flat after 10,000
jobs" check).

It depends only on the HTTP interface and the CLI, not on how the server is built inside.
The clients run on the same machine as the server and take CPU from it: say so with the figures.

Usage: python bench/throughput.py [--db sqlite,postgresql] [--concurrency 1,4,16,64]
                                  [--duration 8] [--jobs N] [--memory-jobs 10000] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import httpx

from shared.devstack.load_limits import RAISED_LIMITS

REPO = Path(__file__).resolve().parents[1]
LOAN = REPO / "examples" / "loan-quote.xlsx"
INPUTS = {"principal": 250000, "annual_rate": 0.045, "years": 30, "start_date": "2026-01-01"}
EXECUTE_PATH = "/jobs/execute/bench/loan"
FINISHED = ("completed", "failed")
PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
# Longest a single job may take before the bench counts it as an error (not a speed assumption:
# a job that takes this long is a failure to report, not a slow result).
JOB_TIMEOUT_SECONDS = 300.0
WAIT_SECONDS = 20  # the `wait=` asked for when the server supports it
ONE_CALL = "execute"  # --one-call: the execute request itself waits
QUIET_PROBE_SECONDS = 2.0  # CpuSpeedProbe's samples before any server starts


# --- statistics -------------------------------------------------------------------------------

def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (0..100) by linear interpolation between closest ranks; None if empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summary(values: list[float]) -> dict:
    """p50, p95, p99 and max of ``values`` (None each when there are none)."""
    return {"p50": percentile(values, 50), "p95": percentile(values, 95), "p99": percentile(values, 99),
            "max": max(values) if values else None}


def iso_ms_between(start: str, end: str) -> float:
    """Milliseconds from one ISO 8601 timestamp of the API to another."""
    parse = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))  # noqa: E731
    return (parse(end) - parse(start)).total_seconds() * 1000


# --- the server's process tree, from /proc -------------------------------------------------------

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may hold spaces: fields restart after the last ')'.
    return raw[raw.rindex(")") + 2:].split()


def tree_pids(root: int) -> list[int]:
    """``root`` and every live descendant of it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields:
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def tree_cpu_seconds(root: int) -> float:
    """utime + stime of the tree's live processes, plus what they reaped of their children."""
    ticks = 0
    for pid in tree_pids(root):
        fields = _stat_fields(pid)
        if fields:  # after ')': state ppid ... utime=[11] stime=[12] cutime=[13] cstime=[14]
            ticks += sum(int(fields[i]) for i in (11, 12, 13, 14))
    return ticks / CLOCK_TICKS


def tree_rss_mb(root: int) -> float:
    """Resident memory of the tree's live processes, MB (shared pages counted in each)."""
    pages = 0
    for pid in tree_pids(root):
        try:
            pages += int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            pass
    return pages * PAGE_SIZE / 1e6


# --- the dev stack ----------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pgdb(action: str, admin_url: str, name: str) -> None:
    subprocess.run([sys.executable, str(REPO / "scripts" / "pgdb.py"), action, admin_url, name], check=True)


@contextmanager
def scratch_postgres(admin_url: str):
    """A fresh PostgreSQL database for one run, dropped afterwards; yields its URL."""
    name = f"sheetcalc_bench_{uuid.uuid4().hex[:8]}"
    pgdb("create", admin_url, name)
    try:
        yield admin_url.rsplit("/", 1)[0] + "/" + name
    finally:
        pgdb("drop", admin_url, name)


@dataclass
class Stack:
    proc: subprocess.Popen
    base: str
    env: dict
    data_dir: Path


@contextmanager
def dev_stack(data_dir: Path, database_url: str | None, *, start_timeout: float = 180.0, keep_log: Path | None = None,
              env: dict[str, str] | None = None):
    """`sheetcalc dev` on a free port, its output in <data dir>/dev.log (copied to ``keep_log``
    when given); stopped with SIGINT. ``env`` is added to its environment (default: ``RAISED_LIMITS``, shared/devstack/load_limits.py)."""
    env_added = RAISED_LIMITS if env is None else env
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHEETCALC_") and k != "DATABASE_URL"}
    env.update(env_added)
    if database_url:
        env["DATABASE_URL"] = database_url
    port = free_port()
    log = open(data_dir / "dev.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "shared.cli", "dev", "--port", str(port), "--data-dir", str(data_dir)],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"sheetcalc dev exited ({proc.returncode}); see {data_dir / 'dev.log'}")
            try:
                if httpx.get(f"{base}/health", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"sheetcalc dev did not answer /health in {start_timeout:.0f} s")
            time.sleep(0.2)
        # For a profiler to attach to (docs/profiling.md): py-spy record --subprocesses --pid <pid>
        print(f"sheetcalc dev: pid {proc.pid} on {base}", file=sys.stderr, flush=True)
        yield Stack(proc, base, env, data_dir)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)  # the group this bench started, nothing else
                proc.wait(10)
        log.close()
        if keep_log is not None:
            keep_log.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(data_dir / "dev.log", keep_log)


def _ok(response: httpx.Response) -> dict:
    if response.status_code >= 400:
        raise SystemExit(f"{response.request.method} {response.request.url.path}: {response.status_code} {response.text[:300]}")
    return response.json() if response.content else {}


def deploy(stack: Stack) -> dict:
    """Tenant `bench` (CLI), engine `loan` with the sample workbook active, and a consumer allowed
    everything (management API); the consumer's headers."""
    made = subprocess.run(
        [sys.executable, "-m", "shared.cli", "create-tenant", "--slug", "bench", "--name", "Bench",
         "--admin-email", "bench@bench.example", "--data-dir", str(stack.data_dir)],
        cwd=REPO, env=stack.env, capture_output=True, text=True, check=True,
    )
    temporary = json.loads(made.stdout)["temporary_password"]
    with httpx.Client(base_url=stack.base, timeout=60) as http:
        token = _ok(http.post("/auth/login", json={"email": "bench@bench.example", "password": temporary}))["access_token"]
        _ok(http.post("/auth/change-password", headers={"Authorization": f"Bearer {token}"},
                      json={"current_password": temporary, "new_password": "bench-password-1"}))
        http.cookies.clear()
        token = _ok(http.post("/auth/login", json={"email": "bench@bench.example", "password": "bench-password-1"}))["access_token"]
        http.cookies.clear()
        auth = {"Authorization": f"Bearer {token}"}
        engine = _ok(http.post("/engines", headers=auth, json={"name": "Loan", "slug": "loan"}))
        version = _ok(http.post(f"/engines/{engine['id']}/versions", headers=auth, data={"version": "1"},
                                files={"file": ("loan.xlsx", LOAN.read_bytes())}))
        _ok(http.post(f"/engines/{engine['id']}/versions/{version['id']}/activate", headers=auth))
        consumer = _ok(http.post("/consumers", headers=auth, json={"name": "bench"}))
        _ok(http.put(f"/engines/{engine['id']}/access/{consumer['id']}", headers=auth,
                     json={"can_execute": True, "can_view_jobs": True, "can_download": True, "can_view_about": True}))
    return {"X-API-Key": consumer["api_key"]}


def supports_wait(base: str) -> bool:
    """Whether `GET /jobs/{job_id}` takes a `wait` query parameter, from the server's OpenAPI."""
    spec = httpx.get(f"{base}/openapi.json", timeout=30).json()
    for path, item in spec.get("paths", {}).items():
        if path.startswith("/jobs/{") and path.count("/") == 2:
            params = item.get("get", {}).get("parameters", [])
            return any(p.get("name") == "wait" and p.get("in") == "query" for p in params)
    return False


# --- load -------------------------------------------------------------------------------------

@dataclass
class Tally:
    client_ms: list[float] = field(default_factory=list)
    server_ms: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    last_done: float = 0.0
    # Jobs started before this (perf_counter) are the level's settling: run, not recorded.
    measure_from: float = 0.0

    @property
    def jobs(self) -> int:
        return len(self.client_ms)

    def error(self, kind: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1


class LeanResponse:
    def __init__(self, status_code: int, body: bytes):
        self.status_code = status_code
        self.content = body

    def json(self):
        return json.loads(self.content)


class LeanClient:
    """One keep-alive HTTP/1.1 connection and just what the job loop sends and reads (JSON bodies
    with a Content-Length, as uvicorn answers them). httpx's AsyncClient took the bench about
    1.2 ms of CPU per job, a sixth of the machine at full load, taken from the server it measures;
    this takes about a fifth of that (``--client httpx`` to compare)."""

    Error = (OSError, asyncio.IncompleteReadError, ValueError)

    def __init__(self, base: str, timeout: float):
        url = httpx.URL(base)
        self.host, self.port, self.timeout = url.host, url.port, timeout
        self._streams = None

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        if self._streams:
            self._streams[1].close()

    async def request(self, method: str, path: str, *, headers: dict, json_body=None, params=None) -> LeanResponse:
        if params:
            path += "?" + "&".join(f"{k}={v}" for k, v in params.items())
        body = json.dumps(json_body).encode() if json_body is not None else b""
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}", f"Content-Length: {len(body)}"]
        if json_body is not None:
            lines.append("Content-Type: application/json")
        lines += [f"{name}: {value}" for name, value in headers.items()]
        head = ("\r\n".join(lines) + "\r\n\r\n").encode()
        try:
            return await asyncio.wait_for(self._exchange(head + body), self.timeout)
        except BaseException:
            if self._streams:  # a half-read answer: this connection cannot be reused
                self._streams[1].close()
                self._streams = None
            raise

    async def _exchange(self, data: bytes) -> LeanResponse:
        if self._streams is None:
            self._streams = await asyncio.open_connection(self.host, self.port)
        reader, writer = self._streams
        writer.write(data)
        status = int((await reader.readuntil(b"\r\n")).split(b" ", 2)[1])
        length, close = None, False
        for line in (await reader.readuntil(b"\r\n\r\n")).split(b"\r\n"):
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection" and value.strip().lower() == b"close":
                close = True
        if length is None:
            raise ValueError("an answer without Content-Length")
        body = await reader.readexactly(length)
        if close:
            writer.close()
            self._streams = None
        return LeanResponse(status, body)

    async def post(self, path: str, *, headers: dict, json=None, params=None) -> LeanResponse:
        return await self.request("POST", path, headers=headers, json_body=json, params=params)

    async def get(self, path: str, *, headers: dict, params=None) -> LeanResponse:
        return await self.request("GET", path, headers=headers, params=params)


async def one_job(http, key: dict, tally: Tally, *, wait: bool | str, poll_interval: float) -> None:
    """Execute, then wait until the job is finished; record its latencies or the error.
    ``wait``: False polls, True waits with GET ?wait=, ONE_CALL waits in the execute call itself."""
    started = time.perf_counter()
    one_call = wait == ONE_CALL
    response = await http.post(EXECUTE_PATH, headers=key, json={"inputs": INPUTS},
                               params={"wait": WAIT_SECONDS} if one_call else None)
    if one_call and response.status_code == 200:
        await _record(tally, response.json(), started)
        return
    if response.status_code != 202:
        tally.error(f"execute {response.status_code}")
        return
    job_id = response.json()["job_id"]
    params = {"wait": WAIT_SECONDS} if wait else None
    while True:
        response = await http.get(f"/jobs/{job_id}", headers=key, params=params)
        if response.status_code != 200:
            tally.error(f"poll {response.status_code}")
            return
        job = response.json()
        if job["status"] in FINISHED:
            break
        if time.perf_counter() - started > JOB_TIMEOUT_SECONDS:
            tally.error("timeout")
            return
        if not wait:
            await asyncio.sleep(poll_interval)
    await _record(tally, job, started)


async def _record(tally: Tally, job: dict, started: float) -> None:
    now = time.perf_counter()
    if job["status"] != "completed":
        tally.error("job failed")
        return
    if started < tally.measure_from:
        return  # settling
    tally.client_ms.append((now - started) * 1000)
    tally.server_ms.append(iso_ms_between(job["created_at"], job["completed_at"]))
    tally.last_done = now


async def drive(base: str, key: dict, *, concurrency: int, duration: float | None, jobs: int | None,
                wait: bool, poll_interval: float, on_job=None, lean: bool = True,
                settle: float = 0.0, on_settled=None) -> tuple[Tally, float]:
    """``concurrency`` clients looping jobs until ``duration`` is over or ``jobs`` were started.

    With ``settle`` (seconds, with ``duration`` only) the clients first run that long unrecorded
    (``on_settled()`` is called when it is over); the elapsed time returned starts there."""
    tally = Tally()
    started = time.perf_counter()
    if settle and duration:
        tally.measure_from = started + settle
        if on_settled:
            asyncio.get_running_loop().call_later(settle, on_settled)
        started = tally.measure_from
    stop_at = started + duration if duration else None
    budget = [jobs if jobs else None]

    def another() -> bool:
        if stop_at is not None and time.perf_counter() >= stop_at:
            return False
        if budget[0] is not None:
            if budget[0] <= 0:
                return False
            budget[0] -= 1
        return True

    # Each client has its own connection pool of one connection, as separate callers would. One
    # pool shared by 64 clients cost the bench a scan of every pooled connection on each request
    # (httpcore's _assign_requests_to_connections): the bench's own process then used a whole core
    # and was what limited the 64-client figures, not the server.
    timeout = WAIT_SECONDS + 60.0

    def connect():
        if lean:
            return LeanClient(base, timeout=timeout)
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        return httpx.AsyncClient(base_url=base, limits=limits, timeout=httpx.Timeout(timeout))

    async def client() -> None:
        async with connect() as http:
            while another():
                try:
                    await one_job(http, key, tally, wait=wait, poll_interval=poll_interval)
                except (httpx.HTTPError, TimeoutError, *LeanClient.Error) as exc:
                    tally.error(type(exc).__name__)
                if on_job:
                    on_job(tally)

    await asyncio.gather(*(client() for _ in range(concurrency)))
    elapsed = (tally.last_done or time.perf_counter()) - started
    return tally, elapsed


class HealthProbe(threading.Thread):
    """GET /health every ``interval`` seconds from its own thread and connection until stopped."""

    def __init__(self, base: str, interval: float = 0.25):
        super().__init__(daemon=True)
        self.base, self.interval = base, interval
        self.ms: list[float] = []
        self.failures = 0
        self._stopping = threading.Event()

    def run(self) -> None:
        with httpx.Client(base_url=self.base, timeout=60) as http:
            while not self._stopping.is_set():
                t0 = time.perf_counter()
                try:
                    ok = http.get("/health").status_code == 200
                except httpx.HTTPError:
                    ok = False
                if ok:
                    self.ms.append((time.perf_counter() - t0) * 1000)
                else:
                    self.failures += 1
                self._stopping.wait(self.interval)

    def stop(self) -> None:
        self._stopping.set()
        self.join(90)


class CpuSpeedProbe:
    """How much the machine's cores do per second right now, beside the load: a process of its own
    runs a fixed pure-Python loop three times every 0.25 s and reports the quickest run's own CPU
    time (its thread's, so time spent waiting for a core is not in it; the quickest, so a cold
    cache after the sleep is not either). On a shared host it rises when the cores do
    less per second (another tenant on the same physical cores, a lower clock): every figure of a
    level measured at a high probe is lower for the same server. Lower is a faster machine."""

    CODE = ("import time\n"
            "def once():\n"
            "    t = time.thread_time_ns(); sum(range(20000)); return time.thread_time_ns() - t\n"
            "while True:\n"
            "    print(min(once() for _ in range(3)) // 1000, flush=True); time.sleep(0.25)\n")

    def __init__(self):
        self.samples: list[float] = []
        self._proc = subprocess.Popen([sys.executable, "-c", self.CODE], stdout=subprocess.PIPE, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self._proc.stdout:
            self.samples.append(float(line))

    def median_since(self, index: int) -> float | None:
        return percentile(self.samples[index:], 50)

    def stop(self) -> None:
        self._proc.kill()
        self._proc.wait(10)
        self._reader.join(10)


class Timeline(threading.Thread):
    """Every ``interval`` seconds until stopped: the jobs recorded since the last sample and the
    server tree's CPU over them (the level's figures second by second: how steady it ran)."""

    def __init__(self, root: int, interval: float = 1.0):
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self.tally: Tally | None = None  # the level's, once its first job is done (drive's on_job)
        self.seconds: list[dict] = []
        self._stopping = threading.Event()

    def run(self) -> None:
        last = (time.perf_counter(), 0, tree_cpu_seconds(self.root))
        while not self._stopping.wait(self.interval):
            now = (time.perf_counter(), self.tally.jobs if self.tally else 0, tree_cpu_seconds(self.root))
            jobs = now[1] - last[1]
            if last[1]:  # whole seconds after the first recorded job (settling records none)
                self.seconds.append({"jobs_per_s": jobs / (now[0] - last[0]),
                                     "cpu_ms_per_job": (now[2] - last[2]) * 1000 / jobs if jobs else None})
            last = now

    def stop(self) -> None:
        self._stopping.set()
        self.join(30)


def measure_level(stack: Stack, key: dict, *, db: str, concurrency: int, args, wait: bool,
                  speed: CpuSpeedProbe | None = None) -> dict:
    """One concurrency level: the row of the table. With ``args.settle`` the clients run that long
    first; CPU, memory and jobs are counted from then on (/health is probed throughout)."""
    root = stack.proc.pid
    at_start: dict = {}

    def mark() -> None:
        at_start.update(rss=tree_rss_mb(root), cpu=tree_cpu_seconds(root), bench_cpu=time.process_time(),
                        speed=len(speed.samples) if speed else 0)

    if not args.settle:
        mark()
    probe = HealthProbe(stack.base)
    probe.start()
    timeline = Timeline(root) if args.timeline else None
    if timeline:
        timeline.start()

    def seen(tally: Tally) -> None:
        if timeline:
            timeline.tally = tally

    tally, elapsed = asyncio.run(drive(stack.base, key, concurrency=concurrency, duration=None if args.jobs else args.duration,
                                       jobs=args.jobs, wait=wait, poll_interval=args.poll_interval, on_job=seen,
                                       lean=args.client == "lean", settle=args.settle, on_settled=mark))
    probe.stop()
    if timeline:
        timeline.stop()
    cpu = tree_cpu_seconds(root) - at_start["cpu"]
    bench_cpu = time.process_time() - at_start["bench_cpu"]
    health = summary(probe.ms)
    return {
        "db": db, "concurrency": concurrency, "jobs": tally.jobs, "errors": tally.errors,
        "settle_s": args.settle, "seconds": round(elapsed, 2),
        "jobs_per_s": tally.jobs / elapsed if elapsed > 0 and tally.jobs else 0.0,
        "client_ms": summary(tally.client_ms), "server_ms": summary(tally.server_ms),
        "cpu_ms_per_job": cpu * 1000 / tally.jobs if tally.jobs else None,
        # The bench's own process (its clients and the /health probe), on the same two cores.
        "bench_cpu_ms_per_job": bench_cpu * 1000 / tally.jobs if tally.jobs else None,
        "rss_mb_start": at_start["rss"], "rss_mb_end": tree_rss_mb(root),
        "health_ms": {"p50": health["p50"], "p99": health["p99"], "max": health["max"], "probes": len(probe.ms),
                      "failed": probe.failures},
        "cpu_probe_us": speed.median_since(at_start["speed"]) if speed else None,
        "load_avg_1m": os.getloadavg()[0],
        "timeline": timeline.seconds if timeline else None,
    }


def measure_memory(stack: Stack, key: dict, *, jobs: int, args, wait: bool) -> dict:
    """``jobs`` more jobs at 16 clients; the tree's RSS sampled every jobs/10 of them."""
    root = stack.proc.pid
    every = max(1, jobs // 10)
    samples = [(0, tree_rss_mb(root))]

    def sample(tally: Tally) -> None:
        if tally.jobs >= samples[-1][0] + every:
            samples.append((tally.jobs, tree_rss_mb(root)))

    tally, _ = asyncio.run(drive(stack.base, key, concurrency=16, duration=None, jobs=jobs, wait=wait,
                                 poll_interval=args.poll_interval, on_job=sample, lean=args.client == "lean"))
    if samples[-1][0] != tally.jobs:
        samples.append((tally.jobs, tree_rss_mb(root)))
    return {"jobs": tally.jobs, "errors": tally.errors, "rss_mb": samples}


def run_database(db: str, database_url: str | None, args, speed: CpuSpeedProbe | None = None) -> dict:
    with tempfile.TemporaryDirectory(prefix="sheetcalc-bench-") as tmp:
        keep_log = Path(args.keep_logs) / f"{db}-dev.log" if args.keep_logs else None
        with dev_stack(Path(tmp), database_url, keep_log=keep_log) as stack:
            key = deploy(stack)
            wait = supports_wait(stack.base) and not args.no_wait
            if wait and args.one_call:
                wait = ONE_CALL
            asyncio.run(drive(stack.base, key, concurrency=1, duration=None, jobs=args.warmup, wait=wait,
                              poll_interval=args.poll_interval, lean=args.client == "lean"))
            levels = [measure_level(stack, key, db=db, concurrency=c, args=args, wait=wait, speed=speed)
                      for c in args.concurrency]
            memory = measure_memory(stack, key, jobs=args.memory_jobs, args=args, wait=wait) if args.memory_jobs else None
            return {"db": db, "wait_supported": wait, "levels": levels, "memory": memory}


def warm_calculation(n: int) -> dict:
    """The calculation alone, in this process (what a job would cost with no service around it):
    the sample workbook loaded once, then ``n`` times inputs in, recalculate, outputs out; and
    the same with the filled workbook written. Milliseconds, p50 / p95."""
    sys.path.insert(0, str(REPO))
    from shared.calc import get_engine

    workbook = get_engine("ironcalc").load_xlsx(LOAN.read_bytes())
    calc, written = [], []
    for i in range(n):
        inputs = {**INPUTS, "principal": 100000 + i}
        t0 = time.perf_counter()
        workbook.calculate(inputs)
        calc.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        workbook.calculate(inputs)
        workbook.to_xlsx()
        written.append((time.perf_counter() - t0) * 1000)
    return {"jobs": n, "calculate_ms": summary(calc), "calculate_and_write_ms": summary(written)}


# --- output -----------------------------------------------------------------------------------

def _f(value, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table(report: dict) -> str:
    """The results as a Markdown table (the README's Benchmarks table is this, pasted)."""
    lines = [
        "| db | clients | jobs/s | client p50 / p95 / p99 ms | server p50 / p95 / p99 ms | CPU ms/job "
        "| bench CPU ms/job | RSS MB start → end | /health p50 / p99 / max ms | load 1m | CPU probe µs | jobs (errors) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in report["runs"]:
        for r in run["levels"]:
            c, s, h = r["client_ms"], r["server_ms"], r["health_ms"]
            errors = sum(r["errors"].values())
            lines.append(
                f"| {r['db']} | {r['concurrency']} | {_f(r['jobs_per_s'])} "
                f"| {_f(c['p50'])} / {_f(c['p95'])} / {_f(c['p99'])} | {_f(s['p50'])} / {_f(s['p95'])} / {_f(s['p99'])} "
                f"| {_f(r['cpu_ms_per_job'])} | {_f(r.get('bench_cpu_ms_per_job'))} "
                f"| {_f(r['rss_mb_start'], 0)} → {_f(r['rss_mb_end'], 0)} "
                f"| {_f(h['p50'])} / {_f(h.get('p99'))} / {_f(h['max'])} | {r['load_avg_1m']:.2f} "
                f"| {_f(r.get('cpu_probe_us'), 0)} | {r['jobs']} ({errors}) |"
            )
    out = "\n".join(lines)
    for run in report["runs"]:
        if run["memory"]:
            m = run["memory"]
            series = ", ".join(f"{n}: {mb:.0f}" for n, mb in m["rss_mb"])
            kinds = " (" + ", ".join(f"{kind}: {n}" for kind, n in m["errors"].items()) + ")" if m["errors"] else ""
            out += f"\n\n{run['db']}: RSS MB after jobs ({m['jobs']} jobs, {sum(m['errors'].values())} errors{kinds}): {series}"
    if report.get("calculation"):
        c = report["calculation"]
        out += (f"\n\nwarm calculation in-process ({c['jobs']} times): p50 {_f(c['calculate_ms']['p50'], 3)} ms,"
                f" with the filled workbook written p50 {_f(c['calculate_and_write_ms']['p50'], 3)} ms")
    for run in report["runs"]:
        for r in run["levels"]:
            if r.get("timeline"):
                rates = " ".join(_f(second["jobs_per_s"], 0) for second in r["timeline"])
                costs = " ".join(_f(second["cpu_ms_per_job"]) for second in r["timeline"])
                out += f"\n\n{r['db']} x{r['concurrency']}, second by second: jobs/s {rates}; CPU ms/job {costs}"
    errors = {(r["db"], r["concurrency"]): r["errors"] for run in report["runs"] for r in run["levels"] if r["errors"]}
    if errors:
        out += "\n\nerrors: " + "; ".join(f"{db} x{c}: {e}" for (db, c), e in errors.items())
    return out


def header(report: dict) -> str:
    m = report["machine"]
    seen = {ONE_CALL: "POST execute?wait= (one call per job)", True: "GET /jobs/{id}?wait=", False: "polling"}
    waits = ", ".join(f"{run['db']}: {seen[run['wait_supported']]}" for run in report["runs"])
    return (f"{report['date']}, {m['cpus']} CPUs, load average before {m['load_avg_before']}, after {m['load_avg_after']}; "
            f"CPU probe at rest {_f(m.get('cpu_probe_us_before'), 0)} µs; "
            f"completion seen by {waits}; clients' HTTP library: {report.get('client', 'httpx')}; "
            f"each level {report.get('settle_s', 0):g} s unrecorded first")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", default="sqlite,postgresql", help="comma-separated: sqlite, postgresql")
    p.add_argument("--concurrency", default="1,4,16,64", type=lambda s: [int(x) for x in s.split(",")])
    p.add_argument("--duration", type=float, default=8.0, help="seconds per level (default 8)")
    p.add_argument("--settle", type=float, default=2.0,
                   help="seconds each level runs before it is recorded (default 2; not with --jobs)")
    p.add_argument("--jobs", type=int, default=None, help="jobs per level instead of a duration")
    p.add_argument("--warmup", type=int, default=5, help="sequential jobs before measuring (default 5)")
    p.add_argument("--memory-jobs", type=int, default=0, help="then this many jobs, RSS sampled (e.g. 10000)")
    p.add_argument("--calc-jobs", type=int, default=1000, help="warm in-process calculations to time (0: none)")
    p.add_argument("--poll-interval", type=float, default=0.005, help="seconds between polls without wait= (0.005)")
    p.add_argument("--no-wait", action="store_true", help="poll even if the server supports wait=")
    p.add_argument("--one-call", action="store_true", help="wait in the execute call itself (execute?wait=)")
    p.add_argument("--client", choices=("lean", "httpx"), default="lean",
                   help="the clients' HTTP library: a minimal keep-alive one (default) or httpx")
    p.add_argument("--pg-admin-url", default=os.environ.get("SHEETCALC_BENCH_PG_ADMIN_URL", PG_ADMIN_URL))
    p.add_argument("--timeline", action="store_true",
                   help="also print each level's jobs/s and CPU per job second by second")
    p.add_argument("--keep-logs", default=None, help="copy each server's log to DIR/<db>-dev.log")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    args = p.parse_args(argv)
    args.db = [d.strip() for d in args.db.split(",") if d.strip()]
    if args.jobs:
        args.settle = 0.0  # a level of so many jobs records them all
    unknown = set(args.db) - {"sqlite", "postgresql"}
    if unknown:
        p.error(f"unknown --db {', '.join(sorted(unknown))}")
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    report = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_avg_before": [round(x, 2) for x in os.getloadavg()]},
        "runs": [],
        "client": args.client,
        "settle_s": args.settle,
    }
    speed = CpuSpeedProbe()
    try:
        time.sleep(QUIET_PROBE_SECONDS)  # the probe before any server runs: the machine at rest
        report["machine"]["cpu_probe_us_before"] = speed.median_since(0)
        for db in args.db:
            if db == "postgresql":
                with scratch_postgres(args.pg_admin_url) as url:
                    report["runs"].append(run_database(db, url, args, speed))
            else:
                report["runs"].append(run_database(db, None, args, speed))
    finally:
        speed.stop()
    if args.calc_jobs:
        report["calculation"] = warm_calculation(args.calc_jobs)
    report["machine"]["load_avg_after"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(header(report))
        print(table(report))
    return report


if __name__ == "__main__":
    main()
