"""Request body limits, counted while the body streams in: a pure ASGI middleware, so the same
rule holds under uvicorn (``sheetcalc dev``, chunked bodies with no declared length) and under
Mangum (the API Lambda, where API Gateway has already cut the body at its own 10 MB).

A route that takes a workbook (marked with :func:`takes_upload`) accepts the upload limit plus
room for the multipart envelope; every other request accepts ``max_json_body_bytes``. Which limit
applies is decided when the body is first read, by which point the router has chosen the route
but no dependency (authentication included) has run yet: FastAPI reads and parses the body first.
A declared ``Content-Length`` over the limit is refused at that first read, before a byte is read;
a route that never reads its body answers as usual and the server drops the body.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared.config import Settings, get_settings

# Room for the multipart envelope and the other form fields around the workbook itself.
ENVELOPE_BYTES = 1024 * 1024

_UPLOAD_ENDPOINTS: set[Callable[..., Any]] = set()


def takes_upload(endpoint: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a route's endpoint as taking a workbook: its body may reach the upload limit."""
    _UPLOAD_ENDPOINTS.add(endpoint)
    return endpoint


def _megabytes(size: int) -> str:
    mb = size / (1024 * 1024)
    return f"{mb:g} MB" if mb >= 0.1 else f"{size} bytes"


def _limit_for(scope: Scope, settings: Settings) -> tuple[int, str]:
    """The largest body the request's route takes, and the 413 message that names it."""
    if scope.get("endpoint") in _UPLOAD_ENDPOINTS:
        return settings.max_upload_bytes + ENVELOPE_BYTES, f"The request is larger than the {_megabytes(settings.max_upload_bytes)} upload limit"
    return settings.max_json_body_bytes, f"The request body is larger than the {_megabytes(settings.max_json_body_bytes)} limit"


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            return int(value) if value.isdigit() else None
    return None


class _TooLarge(Exception):
    """Raised into the app from ``receive``; the middleware answers 413 in its place."""


class BodyLimit:
    """Answer 413 ``{"detail": ...}`` as soon as a request's body passes its route's limit."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        settings = get_settings()
        declared = _declared_length(scope)
        received = 0
        refusal: str | None = None
        started = False

        async def limited_receive() -> Message:
            nonlocal received, refusal
            limit, message_text = _limit_for(scope, settings)
            if declared is not None and declared > limit:
                refusal = message_text
                raise _TooLarge
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    refusal = message_text
                    raise _TooLarge
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            if refusal is not None and not started:
                return  # whatever the app made of the interrupted body; the 413 below replaces it
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracked_send)
        except Exception:
            if refusal is None or started:
                raise
        if refusal is not None and not started:
            await _refuse(send, refusal)


async def _refuse(send: Send, detail: str) -> None:
    # The connection stays open: the server reads and drops the rest of the body (nothing of it
    # is kept), so a client that sends it all still reads this answer instead of a reset.
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def install(app: FastAPI) -> None:
    """Put the body limits in front of every route."""
    app.add_middleware(BodyLimit)
