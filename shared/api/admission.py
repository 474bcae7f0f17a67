"""Admission of consumer calls in one API process: a burst waits its turn or is pushed back before
its bodies are read, so it can neither starve the event loop (``/health`` answers in milliseconds
meanwhile) nor make another tenant's call queue behind it.

A consumer call (a path under ``/jobs/``) is in progress from its admission until its answer is
sent, or until it starts waiting (``wait=N``, told by ``shared.services.job_waits.waiting_starts``:
a waiter holds no thread, connection or turn, and waiters have bounds of their own). A process
has at most ``api_max_job_calls`` calls in progress, at most ``api_max_job_calls_per_tenant`` of
them of one tenant. A call beyond waits for a place, its body unread (a coroutine waiting on a
future costs the event loop nothing): when a place frees, it goes to the tenants waiting in turn,
each call of a tenant in its order, so one tenant's burst does not stand in front of another
tenant's call. At most ``api_max_queued_job_calls`` calls wait in a process, at most
``api_max_queued_job_calls_per_tenant`` of one tenant, each at most ``WAIT_SECONDS``; beyond,
the call is answered at once: 429 when its tenant has its share waiting, 503 otherwise, both with
``Retry-After: 1``. 0 turns a bound off.

The tenant is the one the call's API key names (keys are ``{tenant_slug}_{uuid}``), read from the
headers and not checked here (the services check the key): a call with a key naming another tenant
takes that tenant's turn for the milliseconds it takes to refuse it, as an anonymous flood takes
the process's. It is a load shedder, not an access rule. Behind API Gateway each Lambda container
serves one request at a time, so there the bounds never bind. Pure ASGI, on the event loop: no
lock (one loop per process), no thread, no body read.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter, deque

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from shared.config import Settings, get_settings
from shared.services import job_waits

CONSUMER_PREFIX = "/jobs/"
RETRY_AFTER_SECONDS = 1
# The longest a call waits for a place: a burst the process cannot start within this is pushed back.
WAIT_SECONDS = 10.0
BUSY = "The service is busy: too many requests in progress. Retry after 1 second."
TENANT_BUSY = "Too many requests in progress at once for this tenant. Retry after 1 second."
# A tenant slug is at most 100 characters: a longer "key" is not a key, counted under its start.
_MAX_SLUG = 100


def tenant_named(scope: Scope) -> str:
    """The tenant slug the request's API key names (X-API-Key, else a bearer token); "" for none."""
    key = b""
    for name, value in scope.get("headers", ()):
        if name == b"x-api-key":
            key = value
            break
        if name == b"authorization" and not key and value[:7].lower() == b"bearer ":
            key = value[7:].strip()
    slug, separator, _ = key.rpartition(b"_")
    return slug[:_MAX_SLUG].decode("latin-1") if separator else ""


class Refused(Exception):
    """No place for the call: answered ``status`` with ``detail``."""

    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail


class Gate:
    """One process's places for consumer calls, and the calls waiting for one, by tenant."""

    def __init__(self) -> None:
        self.in_progress: Counter = Counter()  # None -> every tenant's, a slug -> that tenant's
        self.waiting: dict[str, deque[asyncio.Future]] = {}  # in the order tenants get their turns
        self.queued = 0

    def _has_room(self, tenant: str, settings: Settings) -> bool:
        return (not settings.api_max_job_calls or self.in_progress[None] < settings.api_max_job_calls) and (
            not settings.api_max_job_calls_per_tenant or self.in_progress[tenant] < settings.api_max_job_calls_per_tenant)

    def _take(self, tenant: str) -> None:
        self.in_progress[None] += 1
        self.in_progress[tenant] += 1

    async def enter(self, tenant: str, settings: Settings) -> None:
        """Take a place for a call of ``tenant``, waiting for one in turn; Refused when it cannot."""
        if tenant not in self.waiting and self._has_room(tenant, settings):
            self._take(tenant)
            return
        if settings.api_max_queued_job_calls_per_tenant and len(self.waiting.get(tenant, ())) >= settings.api_max_queued_job_calls_per_tenant:
            raise Refused(429, TENANT_BUSY)
        if settings.api_max_queued_job_calls and self.queued >= settings.api_max_queued_job_calls:
            raise Refused(503, BUSY)
        place = asyncio.get_running_loop().create_future()
        self.waiting.setdefault(tenant, deque()).append(place)
        self.queued += 1
        try:
            await asyncio.wait_for(asyncio.shield(place), WAIT_SECONDS)
        except BaseException as exc:  # the wait's end, or the client gone (cancelled)
            if place.done() and not place.cancelled():
                self.leave(tenant)  # given a place as the wait ended: hand it on
            else:
                place.cancel()
                self._forget(tenant, place)
            if isinstance(exc, TimeoutError):
                raise Refused(503, BUSY) from None
            raise

    def _forget(self, tenant: str, place: asyncio.Future) -> None:
        queue = self.waiting.get(tenant)
        if queue is not None and place in queue:
            queue.remove(place)
            self.queued -= 1
            if not queue:
                del self.waiting[tenant]

    def leave(self, tenant: str) -> None:
        """Give a call's place back, and hand the free places to the tenants waiting, in turn."""
        self.in_progress[None] -= 1
        self.in_progress[tenant] -= 1
        if not self.in_progress[tenant]:
            del self.in_progress[tenant]
        self._hand_on(get_settings())

    def _hand_on(self, settings: Settings) -> None:
        # One call of each tenant in turn (a tenant served goes to the back of the line), round
        # after round, while there are places and tenants waiting under their share.
        served = True
        while served and self.waiting:
            served = False
            for tenant in list(self.waiting):
                if settings.api_max_job_calls and self.in_progress[None] >= settings.api_max_job_calls:
                    return
                if not self._has_room(tenant, settings):
                    continue
                queue = self.waiting.pop(tenant)
                place = queue.popleft()
                self.queued -= 1
                self._take(tenant)
                place.set_result(None)
                served = True
                if queue:
                    self.waiting[tenant] = queue


class _Ticket:
    """One admitted call's place, given back once: when the call starts waiting or when it ends."""

    __slots__ = ("gate", "held", "tenant")

    def __init__(self, gate: Gate, tenant: str):
        self.gate, self.tenant, self.held = gate, tenant, True

    def release(self) -> None:
        if self.held:
            self.held = False
            self.gate.leave(self.tenant)


class Admission:
    """Admit consumer calls up to the process's and each tenant's bounds, in turn; refuse the rest."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.gate = Gate()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _is_consumer_call(scope):
            await self.app(scope, receive, send)
            return
        tenant = tenant_named(scope)
        try:
            await self.gate.enter(tenant, get_settings())
        except Refused as refused:
            await _refuse(send, refused.status, refused.detail)
            return
        ticket = _Ticket(self.gate, tenant)
        told = job_waits.waiting_starts.set(ticket.release)
        try:
            await self.app(scope, receive, send)
        finally:
            job_waits.waiting_starts.reset(told)
            ticket.release()


def _is_consumer_call(scope: Scope) -> bool:
    path, root = scope["path"], scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root):]
    return path.startswith(CONSUMER_PREFIX)


async def _refuse(send: Send, status: int, detail: str) -> None:
    # The body is left unread: the server reads and drops it, and the connection stays usable.
    body = json.dumps({"detail": detail}).encode()
    headers = [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(RETRY_AFTER_SECONDS).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def install(app: FastAPI) -> None:
    """Put admission in front of everything else, so a refusal costs nothing but its answer."""
    app.add_middleware(Admission)
