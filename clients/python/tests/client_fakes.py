"""Fakes for the client's unit tests: a scripted service on httpx.MockTransport and a clock
whose time moves only when the client sleeps."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx

BASE = "http://sheetcalc.test"
KEY = "acme_6f1c2a57-0c0e-4c43-9d55-3b2f5d3f0a11"


class FakeClock:
    """``clock()`` is the time; ``sleep(s)`` records the pause and moves the time on."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    async def async_sleep(self, seconds: float) -> None:
        self.sleep(seconds)


class NoJitter:
    """An rng whose ``random()`` is 0: the policy's pauses are exact."""

    def random(self) -> float:
        return 0.0


Answer = httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]


class FakeService:
    """Answers each request with the next scripted answer for its method and path (the last one
    repeats); an Exception is raised as the transport's. Every request is recorded."""

    def __init__(self) -> None:
        self.script: dict[tuple[str, str], list[Answer]] = {}
        self.requests: list[httpx.Request] = []

    def on(self, method: str, path: str, *answers: Answer) -> FakeService:
        self.script.setdefault((method, path), []).extend(answers)
        return self

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        queue = self.script.get((request.method, request.url.path))
        if not queue:
            return httpx.Response(404, json={"detail": f"no script for {request.method} {request.url.path}"})
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(answer, Exception):
            raise answer
        return answer(request) if callable(answer) else answer

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handler)

    def sent(self, method: str, path: str) -> list[httpx.Request]:
        return [r for r in self.requests if r.method == method and r.url.path == path]


def body(request: httpx.Request) -> dict:
    return json.loads(request.content)
