"""Load and kill: `sheetcalc dev` killed with SIGKILL in the middle of a load and started again on
the same data dir loses nothing it accepted, computes nothing twice and sends no webhook twice.

20 clients submit ``KILL_TEST_JOBS`` (200; 2,000 by hand) jobs, each with a webhook to a real local receiver
that counts deliveries per job. Half-way the server gets SIGKILL; the clients keep trying
(connection errors while it is down are expected and are not accepted jobs) and it is started
again on the same data dir and port. Then every job of the tenant must end completed or failed.

What "computed twice" is judged by: the worker logs ``job <id> completed in ...`` after the
calculation and the stored result, before it commits the outcome (``job_runner.run_job``), and
each run logs to its own file (``LOG_LEVEL=INFO``). A job computed twice in one run, or computed
again after the restart although its outcome was committed before the kill (the database as the
kill left it is read before the restart), fails the test. A job whose line is in both runs while
the database still had it processing at the kill was killed between its calculation and its
commit: nothing of that calculation was kept, so it is computed again; the test counts those.

Nothing waits out a lease: the stack runs with the default processing lease (15 minutes), and
the jobs the kill left processing must finish soon after the restart, because the restarted
stack hands back at once the claims of the killed run's processes (each claim names its process;
shared/services/dead_claims.py), well before their lease would. So that some job surely is
processing at the kill (a loan job takes milliseconds), one job of a second engine calculates for
seconds (``_heavy_workbook``), and the kill comes once it is seen processing.

Webhooks are at most once: the sender records its attempt before the POST, so an attempt the
kill interrupted is never made again. A job without a delivery must be one whose attempt was
recorded, with no answer, before the kill.
"""

from __future__ import annotations

import collections
import json
import os
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from shared.config import Settings
from shared.db.models import Job, JobStatus, Tenant
from shared.db.session import new_session
from tests.calc.budget_workbooks import heavy_when_switched_on
from tests.receiver import WebhookReceiver

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
# The issue asks for 2,000; on a shared 2-core machine that took about 15 minutes (when the dev
# stack computed jobs in the process that answered the load), so the suite runs 200 and
# `KILL_TEST_JOBS=2000` runs the full one (README, Security, has both sets of figures).
JOBS = int(os.environ.get("KILL_TEST_JOBS", "200"))
CLIENTS = 20
# Only a hang reaches these: no verdict depends on the machine's speed.
DEADLINE_SECONDS = 1800.0
GRANT = {"can_execute": True, "can_view_jobs": True, "can_download": True, "can_view_about": True}
# The restarted stack sweeps every 2 s; the processing lease is the default (900 s): a job the
# kill left processing is handed back at the restart, not when its lease runs out.
STACK_ENV = {"LOG_LEVEL": "INFO", "SHEETCALC_SWEEPER_INTERVAL_SECONDS": "2"}
LEASE_SECONDS = Settings.model_fields["processing_lease_seconds"].default
# How soon after the restart the jobs the kill left processing must have finished: far more than
# a restart and a few hundred loan jobs take even on a busy machine, far less than the lease.
HANDED_BACK_WITHIN_SECONDS = LEASE_SECONDS / 3
COMPUTED = re.compile(r"job ([0-9a-f-]{36}) completed in")
FINISHED = (JobStatus.COMPLETED, JobStatus.FAILED)


@dataclass
class Load:
    """What the clients saw."""

    accepted: list[str] = field(default_factory=list)
    server_errors: list[tuple[int, str]] = field(default_factory=list)
    unexpected: list[tuple[int, str]] = field(default_factory=list)
    connection_errors: int = 0
    started: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take_slot(self) -> int | None:
        with self.lock:
            if self.started >= JOBS:
                return None
            self.started += 1
            return self.started


def _until(read, done, what: str, show=repr):
    deadline = time.monotonic() + DEADLINE_SECONDS
    value = None
    while time.monotonic() < deadline:
        value = read()
        if done(value):
            return value
        time.sleep(1)
    raise AssertionError(f"{what} did not happen within {DEADLINE_SECONDS} s: {show(value)}")


def _states(jobs: dict[str, Job]) -> str:
    return repr(collections.Counter(
        (job.status, job.webhook_sent_at is not None, job.webhook_response_status) for job in jobs.values()
    ))


def _deploy(http: httpx.Client, admin: dict, consumer_id: str, slug: str, name: str, filename: str, upload: bytes) -> str:
    """A new engine with ``upload`` as its active version, granted to the consumer; its execute path."""
    engine = http.post("/engines", headers=admin, json={"name": name}).json()
    r = http.post(f"/engines/{engine['id']}/versions", headers=admin, data={"version": "1"}, files={"file": (filename, upload)})
    assert r.status_code == 201, r.text
    assert http.post(f"/engines/{engine['id']}/versions/{r.json()['id']}/activate", headers=admin).status_code == 200
    assert http.put(f"/engines/{engine['id']}/access/{consumer_id}", headers=admin, json=GRANT).status_code == 200
    return f"/jobs/execute/{slug}/{engine['slug']}"


def _set_up_tenant(stack, http: httpx.Client, slug: str) -> tuple[str, str, dict]:
    """A tenant with the loan engine and the heavy one, and a consumer of both: their execute
    paths and the consumer's key."""
    email = f"admin@{slug}.example"
    made = stack.current.cli("create-tenant", "--slug", slug, "--name", "Kill test", "--admin-email", email,
                             "--data-dir", str(stack.data_dir), timeout=300)
    assert made.returncode == 0, made.stderr
    password = json.loads(made.stdout)["temporary_password"]
    token = http.post("/auth/login", json={"email": email, "password": password}).json()["access_token"]
    assert http.post("/auth/change-password", headers={"Authorization": f"Bearer {token}"},
                     json={"current_password": password, "new_password": "a-long-new-password"}).status_code == 200
    http.cookies.clear()
    token = http.post("/auth/login", json={"email": email, "password": "a-long-new-password"}).json()["access_token"]
    http.cookies.clear()
    admin = {"Authorization": f"Bearer {token}"}
    consumer = http.post("/consumers", headers=admin, json={"name": "load"}).json()
    loan = _deploy(http, admin, consumer["id"], slug, "Loan quote", "loan-quote.xlsx", (REPO / "examples" / "loan-quote.xlsx").read_bytes())
    heavy = _deploy(http, admin, consumer["id"], slug, "Heavy", "heavy.xlsx", heavy_when_switched_on())
    return loan, heavy, {"X-API-Key": consumer["api_key"]}


def _client(base_url: str, path: str, key: dict, webhook_url: str, load: Load) -> None:
    with httpx.Client(base_url=base_url, timeout=120) as http:
        while (slot := load.take_slot()) is not None:
            body = {"inputs": {"principal": 100000 + slot, "annual_rate": 0.045, "years": 30}, "webhook_url": webhook_url}
            while True:
                try:
                    r = http.post(path, json=body, headers=key)
                except httpx.TransportError:
                    # The server is down (killed, or not yet up again): not an accepted job; try again.
                    with load.lock:
                        load.connection_errors += 1
                    time.sleep(0.2)
                    continue
                with load.lock:
                    if r.status_code == 202:
                        load.accepted.append(r.json()["job_id"])
                    elif r.status_code >= 500:
                        load.server_errors.append((r.status_code, r.text[:200]))
                    else:
                        load.unexpected.append((r.status_code, r.text[:200]))
                break


def _jobs(url: str, tenant_slug: str) -> dict[str, Job]:
    with new_session(url) as session:
        tenant_id = session.scalar(select(Tenant.id).where(Tenant.slug == tenant_slug))
        rows = session.scalars(select(Job).where(Job.tenant_id == tenant_id)).all()
        for row in rows:
            session.expunge(row)
    return {str(job.id): job for job in rows}


def _status(url: str, job_id: str) -> str:
    with new_session(url) as session:
        return session.scalar(select(Job.status).where(Job.id == uuid.UUID(job_id)))


def _computed(log_path: Path) -> collections.Counter:
    return collections.Counter(COMPUTED.findall(log_path.read_text(errors="replace")))


def test_a_killed_and_restarted_dev_stack_loses_nothing_and_repeats_nothing(restartable_dev_stack):
    stack = restartable_dev_stack(STACK_ENV)
    stack.start()
    database_url = stack.env.get("DATABASE_URL") or f"sqlite:///{stack.data_dir / 'sheetcalc.db'}"
    http = httpx.Client(base_url=stack.base_url, timeout=60)
    slug = f"kill-{uuid.uuid4().hex[:10]}"  # the PostgreSQL run shares its database with other tests
    path, heavy_path, key = _set_up_tenant(stack, http, slug)
    began = time.monotonic()

    with WebhookReceiver() as receiver:
        load = Load()
        clients = [threading.Thread(target=_client, args=(stack.base_url, path, key, receiver.url, load), daemon=True)
                   for _ in range(CLIENTS)]
        for client in clients:
            client.start()

        # GIVEN a download link handed out for a job completed before the kill
        _until(lambda: len(load.accepted), lambda n: n >= 1, "a first accepted job")
        early = load.accepted[0]
        _until(lambda: http.get(f"/jobs/{early}", headers=key).json()["status"], lambda s: s in FINISHED, "the first job")
        link = http.get(f"/jobs/{early}/download", headers=key)
        assert link.status_code == 200, link.text
        before = httpx.get(link.json()["download_url"], timeout=60)
        assert before.status_code == 200 and before.content[:2] == b"PK"

        # WHEN the server is killed with SIGKILL half-way through the load, while a job that
        # calculates for seconds is being calculated
        _until(lambda: len(load.accepted), lambda n: n >= JOBS // 2, "half the load accepted")
        r = http.post(heavy_path, json={"inputs": {"switch": 1}, "webhook_url": receiver.url}, headers=key)
        assert r.status_code == 202, r.text
        heavy = r.json()["job_id"]
        deadline = time.monotonic() + DEADLINE_SECONDS
        while (seen := _status(database_url, heavy)) == JobStatus.PENDING:
            assert time.monotonic() < deadline, "the heavy job was never picked up"
            time.sleep(0.05)
        assert seen == JobStatus.PROCESSING, f"the heavy job was {seen} before it could be seen processing"
        stack.kill()
        killed_at = time.monotonic()
        at_kill = _jobs(database_url, slug)
        # AND started again on the same data dir and port, while the clients keep submitting
        stack.start()
        restarted_in = time.monotonic() - killed_at

        # THEN the jobs the kill left processing finish soon after, not a lease later
        left_processing = {id_ for id_, job in at_kill.items() if job.status == JobStatus.PROCESSING}
        assert heavy in left_processing
        ready_at = time.monotonic()
        _until(lambda: _jobs(database_url, slug), lambda jobs: all(jobs[id_].status in FINISHED for id_ in left_processing),
               "the jobs the kill left processing finished", show=_states)
        handed_back_in = time.monotonic() - ready_at
        assert handed_back_in < HANDED_BACK_WITHIN_SECONDS, (
            f"the {len(left_processing)} jobs left processing by the kill took {handed_back_in:.0f} s after the restart "
            f"(their lease is {LEASE_SECONDS} s)")
        for client in clients:
            client.join(DEADLINE_SECONDS)
        assert not any(client.is_alive() for client in clients), "clients hung"
        submitted_in = time.monotonic() - began

        # THEN every job ends completed or failed, and every webhook is attempted and answered
        # (but those whose attempt the kill interrupted: at most once, they are never made again)
        interrupted = {id_ for id_, job in at_kill.items() if job.webhook_sent_at is not None and job.webhook_response_status is None}

        def settled(jobs: dict[str, Job]) -> bool:
            return all(
                job.status in FINISHED and job.webhook_sent_at is not None
                and (job.webhook_response_status is not None or id_ in interrupted)
                for id_, job in jobs.items()
            )

        final = _until(lambda: _jobs(database_url, slug), settled, "every job finished with its webhook attempted",
                       show=_states)
        settled_in = time.monotonic() - began
        deliveries = collections.Counter(request["json"]["job_id"] for request in receiver.requests)

    # no 5xx, nothing refused that should not have been
    assert load.server_errors == [] and load.unexpected == []
    assert len(load.accepted) == JOBS
    # lost: none. Every accepted job (and any whose 202 the kill swallowed) is in the database, finished
    assert set(load.accepted) <= set(final)
    unfinished = [id_ for id_, job in final.items() if job.status not in FINISHED]
    assert unfinished == []

    # computed twice: none
    run1, run2 = _computed(stack.runs[0].log_path), _computed(stack.runs[1].log_path)
    completed = {id_ for id_, job in final.items() if job.status == JobStatus.COMPLETED}
    assert completed <= set(run1) | set(run2), "a completed job without its calculation in the logs"
    assert [id_ for id_, n in run1.items() if n > 1] == [] and [id_ for id_, n in run2.items() if n > 1] == []
    finished_before_kill = {id_ for id_, job in at_kill.items() if job.status in FINISHED}
    assert finished_before_kill & set(run2) == set(), "a job finished before the kill was computed again"
    redone = set(run1) & set(run2)
    assert all(at_kill[id_].status == JobStatus.PROCESSING for id_ in redone)

    # webhooks: none twice; a missing one is an attempt the kill interrupted, never made again
    # (one the kill cut off mid-body arrives truncated, one per interrupted attempt at most)
    duplicated = {id_: n for id_, n in deliveries.items() if n > 1}
    assert duplicated == {}
    assert len(receiver.truncated) <= len(interrupted)
    missing = {id_ for id_ in final if id_ not in deliveries}
    assert missing <= interrupted
    assert all(final[id_].webhook_response_status is None for id_ in missing)

    # the download link handed out before the kill still downloads the same workbook
    after = httpx.get(link.json()["download_url"], timeout=60)
    assert after.status_code == 200 and after.content == before.content

    figures = {
        "jobs_submitted": JOBS, "clients": CLIENTS, "accepted_202": len(load.accepted),
        "jobs_in_database": len(final), "completed": len(completed),
        "failed": sum(job.status == JobStatus.FAILED for job in final.values()),
        "lost": len(unfinished), "computed_twice": 0, "recomputed_after_kill_uncommitted": len(redone),
        "pending_or_processing_at_kill": sum(job.status not in FINISHED for job in at_kill.values()),
        "processing_at_kill": len(left_processing), "processing_at_kill_finished_seconds": round(handed_back_in, 1),
        "webhooks_delivered": sum(deliveries.values()), "webhooks_duplicated": len(duplicated),
        "webhook_attempts_interrupted_by_kill": len(missing),
        "connection_errors_while_down": load.connection_errors, "server_errors": len(load.server_errors),
        "restart_seconds": round(restarted_in, 1), "submit_seconds": round(submitted_in, 1),
        "all_settled_seconds": round(settled_in, 1),
    }
    print("kill test figures:", json.dumps(figures))
