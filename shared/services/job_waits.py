"""Waiting for a job's answer in one call (``wait=N`` on execute, test-execute and job status).

The rules: ``0 < N <= 25`` seconds; a waiter is registered before the job is first read (so a
completion between that read and the wait is not lost; at execute, under the id the job is then
made with, and the job as queued is that first read), holds no database session or connection while
it waits (each read is its own short unit of work in a worker thread, at most ``api_job_threads``
of them at once in a process), is woken by the job's completion (``shared.adapters.completions``:
PostgreSQL NOTIFY, or unix datagram sockets in dev), and when woken takes the finished job from the
announcement, or reads the job once more (an announcement without the job's state, a state too long
to carry, the deadline). The first read is the normal, checked one (whitelist, key, rate limit,
permission); later reads look at the same row, and a carried state is what the finish wrote to that
row.

Waiters are bounded in each API process: at most ``consumer_max_waiters`` per API key and
``tenant_max_waiters`` per tenant wait at once (0: no bound). A call beyond either does not wait:
it answers at once, as without ``wait`` (execute's 202 with the job as queued, the status as read),
which ``wait``'s contract ("up to N seconds") allows; its job is made and checked as any other.
A request that starts waiting tells the HTTP edge (``waiting_starts``), whose admission control
then counts it no longer among the calls in progress (shared/api/admission.py).

Finishers call ``announce_on_commit`` in their finishing transaction (the worker, with each job's
``finished_state``: the answer is then the job as its finish left it, without a read), or
``announce`` after their commit; a lost announcement costs a waiter its wait, never a job, so
``announce`` logs rather than raises.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar
from sqlalchemy import event
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from shared.adapters import completions
from shared.config import get_settings
from shared.db.models import Job, JobStatus
from shared.db.session import session_scope
from shared.errors import BadRequest
from shared.repositories import jobs as job_repo

log = logging.getLogger(__name__)

MAX_WAIT_SECONDS = 25  # API Gateway answers 504 after 29 s
INVALID_WAIT = f"wait must be a number of seconds greater than 0 and at most {MAX_WAIT_SECONDS}"
FINISHED = (JobStatus.COMPLETED, JobStatus.FAILED)


def seconds(raw: str | None) -> float | None:
    """The ``wait`` query value as seconds, None when absent; BadRequest when out of range."""
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise BadRequest(INVALID_WAIT) from None
    if not math.isfinite(value) or not 0 < value <= MAX_WAIT_SECONDS:
        raise BadRequest(INVALID_WAIT)
    return value


def finished(job: Job) -> bool:
    return job.status in FINISHED


# What a finish writes that the job's status answer shows (besides the two times, both the finish's).
_FINISHED_FIELDS = ("outputs", "error_message", "execution_time_ms")


def finished_state(values: Mapping, at: datetime) -> str:
    """A finished job's state as its announcement carries it: the ``values`` its finish wrote
    (``jobs.finish_many``'s outcome) and the finish time ``at`` (its updated_at and completed_at)."""
    state = {"status": str(values["status"]), "at": at.isoformat(), **{k: values[k] for k in _FINISHED_FIELDS if k in values}}
    return json.dumps(state, separators=(",", ":"))  # ASCII, as an announcement carries it


def _finished_as(job: Job, state: str) -> Job:
    """``job`` (as first read, not attached to a session) as the announced finish left it."""
    fields = json.loads(state)
    job.status = JobStatus(fields.pop("status"))
    job.updated_at = job.completed_at = datetime.fromisoformat(fields.pop("at"))
    for name, value in fields.items():
        setattr(job, name, value)
    return job


def announce(job_ids: Iterable[uuid.UUID | str], states: Mapping[str, str] | None = None) -> None:
    """Wake whoever waits for these jobs, in any process; call after the finishing commit."""
    try:
        completions.announce(job_ids, states)
    except Exception:
        log.warning("could not announce finished jobs; their waiters answer at their deadline", exc_info=True)


def announce_on_commit(session: Session, job_ids: Iterable[uuid.UUID | str], states: Mapping[str, str] | None = None) -> None:
    """Wake whoever waits for these jobs when the session's transaction commits, never before and
    never if it rolls back, handing them the ``states`` (``finished_state``, by job id) of those it
    has. On PostgreSQL the NOTIFY is one statement inside the transaction (no transaction of its
    own; a NOTIFY that fails fails the finish, whose jobs the queue then redelivers); in dev
    (SQLite) ``announce`` runs after the commit."""
    ids = [str(job_id) for job_id in job_ids]
    if ids and not completions.notify_in(session.connection(), ids, states):
        event.listen(session, "after_commit", lambda _session: announce(ids, states), once=True)


def _in_session(read: Callable[[Session], Job]) -> Job:
    with session_scope() as session:
        return read(session)


# This event loop's (one API process's) turns for the job calls' units of work.
_TURNS: RunVar[anyio.CapacityLimiter] = RunVar("sheetcalc_job_turns")


def turns() -> anyio.CapacityLimiter:
    """This event loop's turns for the job calls' units of work (``api_job_threads`` of them)."""
    try:
        return _TURNS.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(get_settings().api_job_threads)
        _TURNS.set(limiter)
        return limiter


async def _in_thread(read: Callable[[Session], Job]) -> Job:
    """``read`` in its own session in a worker thread, at most ``api_job_threads`` at once in
    this process; the others wait their turn on the event loop, holding no thread or connection.

    Without the bound every request in flight had a thread (up to 40): at 64 clients, 32 per API
    process, the threads fought over the process's GIL, SQLite's write lock and PostgreSQL's pool
    (whose overflow connections were opened and closed again for every request), and the event
    loop, /health's included, waited behind them (issue 15: PostgreSQL 210-225 -> 266-275 jobs/s,
    /health max 83-318 -> 18-27 ms)."""
    return await anyio.to_thread.run_sync(_in_session, read, limiter=turns())


def _reread(job_id: uuid.UUID) -> Callable[[Session], Job]:
    def read(session: Session) -> Job:
        return job_repo.get_job(session, job_id=job_id)

    return read


async def _start_listening() -> completions.Hub:
    hub = completions.hub()
    if hub.listening:  # after the first wait: no hop to a worker thread for nothing
        return hub
    try:
        await run_in_threadpool(hub.ensure_listening)
    except Exception:
        # Not worth failing the request over: without wake-ups the waiter reads at its deadline.
        log.exception("could not listen for completions; this wait ends at its deadline")
    return hub


# This event loop's (one API process's) requests waiting now, by API key and by tenant.
_WAITING: RunVar[Counter] = RunVar("sheetcalc_waiting")

# Set by the HTTP edge for the request in hand (shared/api/admission.py): called when the request
# starts waiting, from when on it holds no thread, connection or turn.
waiting_starts: ContextVar[Callable[[], None] | None] = ContextVar("sheetcalc_waiting_starts", default=None)


def waiting() -> Counter:
    """This event loop's waiters: ``key:<caller>`` and ``tenant:<id>`` -> how many wait now."""
    try:
        return _WAITING.get()
    except LookupError:
        counts: Counter = Counter()
        _WAITING.set(counts)
        return counts


def _holders(job: Job) -> tuple[str, str]:
    # A job a checked read returned is the caller's own (``jobs.get_job``, or made by its execute):
    # a consumer's, or a version's test key's. Named as the rate limit names callers.
    caller = f"consumer:{job.consumer_id}" if job.consumer_id is not None else f"test-key:{job.version_id}"
    return f"key:{caller}", f"tenant:{job.tenant_id}"


@contextmanager
def _a_place_to_wait(job: Job) -> Iterator[bool]:
    """Whether the caller of ``job`` may wait now (its key and its tenant under their bounds); the
    place is taken until the block ends."""
    settings = get_settings()
    counts, (key, tenant) = waiting(), _holders(job)
    if (settings.consumer_max_waiters and counts[key] >= settings.consumer_max_waiters) or (
        settings.tenant_max_waiters and counts[tenant] >= settings.tenant_max_waiters
    ):
        yield False
        return
    counts[key] += 1
    counts[tenant] += 1
    try:
        yield True
    finally:
        for name in (key, tenant):
            counts[name] -= 1
            if not counts[name]:
                del counts[name]


async def _wait_if_allowed(job: Job, woken: completions.Woken, deadline: float) -> Job:
    """``job`` once it has finished or the deadline has passed; at once when it has finished
    already or its caller may not wait now (as without wait)."""
    if finished(job):
        return job
    with _a_place_to_wait(job) as allowed:
        if not allowed:
            return job
        starts = waiting_starts.get()
        if starts is not None:
            starts()
        return await _until_finished(job, woken, deadline)


async def _until_finished(job: Job, woken: completions.Woken, deadline: float) -> Job:
    loop = asyncio.get_running_loop()
    while not finished(job):
        remaining = deadline - loop.time()
        if remaining <= 0:
            break
        try:
            await asyncio.wait_for(woken.wait(), remaining)
            woken.clear()
        except TimeoutError:
            pass
        if woken.state is not None:  # the announcement carried the finished job: no read
            return _finished_as(job, woken.state)
        job = await _in_thread(_reread(job.id))
    return job


async def _watch(hub: completions.Hub, job_id: uuid.UUID, first_read: Callable[[Session], Job], deadline: float) -> Job:
    # Registered before the first read: a completion from then on wakes us.
    woken = hub.register(str(job_id))
    try:
        job = await _in_thread(first_read)
        return await _wait_if_allowed(job, woken, deadline)
    finally:
        hub.unregister(str(job_id), woken)


async def get_job(read: Callable[[Session], Job], *, job_id: uuid.UUID, wait: float | None) -> Job:
    """``read`` (the checked job status), and with ``wait`` the job once it has finished or
    ``wait`` seconds have passed, whichever comes first."""
    if wait is None:
        return await _in_thread(read)
    deadline = asyncio.get_running_loop().time() + wait
    return await _watch(await _start_listening(), job_id, read, deadline)


async def execute(queue: Callable[[Session, uuid.UUID], Job], *, wait: float | None) -> Job:
    """``queue`` (the checked execute, making its job with the id it is given), and with ``wait``
    the job once it has finished or ``wait`` seconds have passed (it may still be pending then)."""
    job_id = uuid.uuid4()

    def make(session: Session) -> Job:
        return queue(session, job_id)

    if wait is None:
        return await _in_thread(make)
    deadline = asyncio.get_running_loop().time() + wait
    hub = await _start_listening()
    # Registered under the id before the job exists: its completion, however soon, wakes us, and
    # the job as queued is the first read (no second one before the wait).
    woken = hub.register(str(job_id))
    try:
        job = await _in_thread(make)
        if job.id == job_id:
            return await _wait_if_allowed(job, woken, deadline)
    finally:
        hub.unregister(str(job_id), woken)
    # An Idempotency-Key answered with the job its first request made: wait for that one.
    return await _watch(hub, job.id, _reread(job.id), deadline)
