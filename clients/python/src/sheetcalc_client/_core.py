"""The client's logic without I/O: a call is a generator that yields ``Http`` (one attempt of a
request) and ``Sleep`` effects, and the sync and async clients each run it with their own I/O.
So retries, back-off and polling are written once and tested with a fake clock and sleep.
"""

from __future__ import annotations

import random
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from sheetcalc_client.errors import NetworkError, error_for, retry_after

T = TypeVar("T")

# The interface specification's polling guidance: 1, 2, 4, 8 seconds, then every 15.
POLL_SCHEDULE = (1.0, 2.0, 4.0, 8.0, 15.0)


@dataclass
class Http:
    """One attempt of a request. ``safe`` requests (GET, or a POST carrying an Idempotency-Key)
    may be sent again after any failure; others only when the service cannot have acted on them."""

    method: str
    url: str
    params: dict[str, Any] | None = None
    json: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    files: Any = None
    data: Any = None
    content: bytes | None = None
    safe: bool = False
    stream: bool = False


@dataclass
class Sleep:
    seconds: float


Effect = Http | Sleep
Op = Generator[Effect, Any, T]

# Connection failures where the request cannot have reached the service: any request may retry.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry connection errors, 429s and 5xx.

    ``max_attempts`` counts the first one. Between attempts: the answer's ``Retry-After`` when it
    has one (plus up to ``base_delay`` of jitter), else ``base_delay`` doubled per attempt up to
    ``max_delay``, less up to ``jitter`` of it at random. A ``Retry-After`` longer than
    ``max_retry_after`` is not waited for: the error is raised (``RateLimited.retry_after``).
    """

    max_attempts: int = 5
    base_delay: float = 0.5
    max_delay: float = 15.0
    jitter: float = 0.5
    max_retry_after: float = 60.0

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """The pause after failed attempt number ``attempt`` (1, 2, ...) without a Retry-After."""
        full = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return full * (1 - self.jitter * rng.random())

    def pause(self, result: httpx.Response | Exception, *, attempt: int, safe: bool, rng: random.Random) -> float | None:
        """Seconds to wait before the next attempt, or None when ``result`` is final."""
        if attempt >= self.max_attempts:
            return None
        if isinstance(result, Exception):
            if isinstance(result, _NOT_SENT) or (safe and isinstance(result, httpx.TransportError)):
                return self.backoff(attempt, rng)
            return None
        status = result.status_code
        # 429 and 503 are answered before the service acts; other 5xx may have left work done.
        if status in (429, 503) or (safe and status in (500, 502, 504)):
            told = retry_after(result)
            if told is None:
                return self.backoff(attempt, rng)
            if told > self.max_retry_after:
                return None
            return told + self.base_delay * rng.random()
        return None


NO_RETRIES = RetryPolicy(max_attempts=1)


def send(request: Http, policy: RetryPolicy, rng: random.Random) -> Op[httpx.Response]:
    """Send ``request`` (the same one, headers and Idempotency-Key included, on every attempt)
    until it succeeds or the policy gives up; an error answer becomes the client's exception."""
    attempt = 0
    while True:
        attempt += 1
        result = yield request
        wait = policy.pause(result, attempt=attempt, safe=request.safe, rng=rng)
        if wait is None:
            if isinstance(result, Exception):
                raise NetworkError(f"{request.method} {request.url}: {type(result).__name__}: {result}") from result
            if result.status_code >= 400:
                raise error_for(result)
            return result
        yield Sleep(wait)


def poll_pauses(schedule: tuple[float, ...] = POLL_SCHEDULE) -> Iterator[float]:
    """The pauses between polls: the schedule, then its last value for ever."""
    yield from schedule
    while True:
        yield schedule[-1]
