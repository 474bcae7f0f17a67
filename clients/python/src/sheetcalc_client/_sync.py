"""Runs the I/O-free calls (``_core``) with an ``httpx.Client`` and a blocking sleep."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Self, TypeVar

import httpx

from sheetcalc_client._core import Http, Op, Sleep

T = TypeVar("T")


class SyncRunner:
    def __init__(self, http: httpx.Client, sleep: Callable[[float], Any] | None):
        self.http = http
        self.sleep = sleep or time.sleep

    def attempt(self, request: Http) -> httpx.Response | Exception:
        built = self.http.build_request(
            request.method, request.url, params=request.params, json=request.json, headers=request.headers,
            files=request.files, data=request.data, content=request.content,
        )
        try:
            response = self.http.send(built, stream=request.stream)
        except httpx.TransportError as exc:
            return exc
        if request.stream and response.status_code >= 400:
            response.read()  # the error's body, for its detail; closes the stream
        return response

    def run(self, op: Op[T]) -> T:
        """Carry out the call's effects until it returns (or raises)."""
        value: Any = None
        try:
            while True:
                effect = op.send(value)
                if isinstance(effect, Sleep):
                    self.sleep(effect.seconds)
                    value = None
                else:
                    value = self.attempt(effect)
        except StopIteration as stop:
            return stop.value


class SyncSession:
    """What ``Client`` and ``AdminClient`` share: an ``httpx.Client`` (made here and closed with the
    session, or given and left open), the runner, and use as a context manager."""

    def __init__(
        self, base_url: str, *, timeout: float, sleep: Callable[[float], Any] | None,
        transport: httpx.BaseTransport | None, http: httpx.Client | None,
    ):
        self._own_http = http is None
        self.http = http or httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout, transport=transport)
        self._runner = SyncRunner(self.http, sleep)

    def close(self) -> None:
        if self._own_http:
            self.http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
