"""Runs the I/O-free calls (``_core``) with an ``httpx.AsyncClient`` and an awaitable sleep."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx

from sheetcalc_client._core import Http, Op, Sleep

T = TypeVar("T")


class AsyncRunner:
    def __init__(self, http: httpx.AsyncClient, sleep: Callable[[float], Awaitable[Any]] | None):
        self.http = http
        self.sleep = sleep or asyncio.sleep

    async def attempt(self, request: Http) -> httpx.Response | Exception:
        built = self.http.build_request(
            request.method, request.url, params=request.params, json=request.json, headers=request.headers,
            files=request.files, data=request.data, content=request.content,
        )
        try:
            response = await self.http.send(built, stream=request.stream)
        except httpx.TransportError as exc:
            return exc
        if request.stream and response.status_code >= 400:
            await response.aread()
        return response

    async def run(self, op: Op[T]) -> T:
        value: Any = None
        try:
            while True:
                effect = op.send(value)
                if isinstance(effect, Sleep):
                    await self.sleep(effect.seconds)
                    value = None
                else:
                    value = await self.attempt(effect)
        except StopIteration as stop:
            return stop.value
